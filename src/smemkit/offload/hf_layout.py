"""Which planner op each part of a Hugging Face decoder is, and where every byte of it will live.

The planner sees a decoder as ``decode_ops``: per layer ``qkv_proj``, ``attention`` (the layer's
KV cache), ``o_proj``, ``gate_proj``/``up_proj``/``down_proj`` (or OPT's ``fc1``/``fc2``, or a
MoE layer's ``experts``), and the ``lm_head``. A Hugging Face model holds them as ``nn.Linear``
modules named ``q_proj``,
``k_proj``, ``v_proj`` (one op), ``o_proj`` or OPT's ``out_proj``, ... inside ``layers.<i>``. This
module maps each linear to its op by name and checks that the modules' bytes add up to the op's
(a config the planner misreads fails here, not in a kernel), turns the plan's per-op ratios into
whole host rows (16-row tiles, rounded up), whole host experts (rounded up) and whole host
sequences, and totals the bytes each
memory will hold. :func:`check_fit` then refuses a layout that cannot fit before anything moves.

Under a GPU budget the rounding never costs HBM: linears round their host rows up, the KV cache
(split by whole sequences, to the nearest) may round down, and whatever that leaves short of the
planner's required offload is moved to the linears, in proportion to the bytes each still holds
in HBM.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError, SmemkitError
from smemkit.offload import ModelConfig, Op, Plan, config_from_hf, host_rows_for_ratio, host_seqs_for_ratio

SUPPORTED_MODEL_TYPES = ("llama", "mistral", "opt", "qwen2", "qwen3", "mixtral", "qwen3_moe")
HALF_DTYPES = (torch.bfloat16, torch.float16)
K_MULTIPLE = 8  # the split kernels read 16-byte vectors of 2-byte elements
# SplitWeight's row tile: its HBM/host boundary is a whole number of 16-row tiles from the end
# (host_rows_for_ratio); host_rows_at_least checks each count it returns against that function.
TILE_ROWS = 16
# linear module name (last part) -> the planner op kind it belongs to
LINEAR_KINDS = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj", "o_proj": "o_proj",
                "out_proj": "o_proj", "gate_proj": "gate_proj", "up_proj": "up_proj",
                "down_proj": "down_proj", "fc1": "fc1", "fc2": "fc2"}
_IN_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.(?:.*\.)?(\w+)$")
EXPERT_PARAMS = ("gate_up_proj", "down_proj")  # transformers 5.x experts modules: E x 2I x H, E x H x I
# HBM the forward takes beyond weights and KV that the formula in workspace_bytes does not see:
# cuBLAS and split-kernel workspaces, the ring path's slots, allocator rounding.
FIXED_WORKSPACE_BYTES = 256 * 2**20


class OffloadFitError(SmemkitError, MemoryError):
    """A layout needs more HBM or pinned host memory than there is (``memory``, ``missing_bytes``)."""

    def __init__(self, memory: str, needed: int, available: int, detail: str) -> None:
        self.memory, self.needed, self.available = memory, needed, available
        self.missing_bytes = needed - available
        super().__init__(f"the offload plan does not fit in {memory}: it needs {_size(needed)} but "
                         f"{_size(available)} is available, {self.missing_bytes} bytes "
                         f"({self.missing_bytes / 2**30:.3f} GiB) missing. {detail}")


def _size(nbytes: int) -> str:
    return f"{nbytes} bytes ({nbytes / 2**30:.3f} GiB)"


@dataclass(frozen=True)
class LinearSplit:
    """One ``nn.Linear``: its op, shape, and how many of its output rows go to host memory."""

    name: str
    op: str
    out_features: int
    in_features: int
    has_bias: bool
    host_rows: int

    @property
    def ratio(self) -> float:
        """The realised offload ratio (host rows / rows); ``host_rows_for_ratio`` maps it back exactly."""
        return self.host_rows / self.out_features


@dataclass(frozen=True)
class ExpertsSplit:
    """One MoE layer's experts module: ``num_experts`` experts, the last ``host_experts`` of them
    (whole experts: a token reads all of its expert or none) in host memory."""

    name: str
    op: str
    num_experts: int
    hidden: int
    intermediate: int
    host_experts: int

    @property
    def expert_elements(self) -> int:
        return 3 * self.hidden * self.intermediate

    @property
    def ratio(self) -> float:
        return self.host_experts / self.num_experts


def host_experts_across_layers(num_experts: list[int], ratios: list[float],
                               total: int | None = None) -> list[int]:
    """Whole host experts per layer for per-layer ratios, rounded once across the layers: ``total``
    experts (default: the fewest holding the planned expert bytes), each layer getting the whole
    part of its share (never more than ``total`` in all) and the layers with the largest
    remainders one more. Rounding up per layer instead puts at least one expert of every layer in
    host memory for any ratio above 0 (for Mixtral-8x7B, 11 GB of host bytes for a 1 GiB plan)."""
    targets = [max(0.0, min(1.0, r)) * e for r, e in zip(ratios, num_experts, strict=True)]
    counts = [min(e, math.floor(t * (1 + 1e-12))) for t, e in zip(targets, num_experts, strict=True)]
    if total is None:
        total = math.ceil(math.fsum(targets) * (1 - 1e-12))
    for i in sorted(range(len(counts)), key=lambda i: (targets[i] - counts[i], -i)):
        if sum(counts) <= total:
            break
        counts[i] -= min(counts[i], sum(counts) - total)
    extra = total - sum(counts)
    for i in sorted(range(len(counts)), key=lambda i: (counts[i] - targets[i], i)):
        if extra <= 0:
            break
        if counts[i] < num_experts[i]:
            counts[i] += 1
            extra -= 1
    return counts


@dataclass(frozen=True)
class CacheSplit:
    """One layer's KV cache: ``batch`` sequences of up to ``max_seq_len`` tokens, the last
    ``host_seqs`` of them in host memory."""

    layer: int
    op: str
    batch: int
    kv_heads: int
    head_dim: int
    max_seq_len: int
    host_seqs: int

    def seq_bytes(self, dtype_bytes: int) -> int:
        return 2 * self.kv_heads * self.max_seq_len * self.head_dim * dtype_bytes


@dataclass(frozen=True)
class OffloadLayout:
    """Where every byte of an offloaded model lives, decided before any of it moves."""

    config: ModelConfig
    ops: tuple[Op, ...]
    plan: Plan
    linears: tuple[LinearSplit, ...]
    caches: tuple[CacheSplit, ...]
    embedding: str
    tied_embedding: bool
    embedding_host_bytes: int
    other_hbm_bytes: int
    workspace_bytes: int
    dtype: torch.dtype
    staging_bytes: int = 0  # HBM staging slots of host_path="prefetch" (prefetch.staging_bytes_of)
    experts: tuple[ExpertsSplit, ...] = ()

    @property
    def dtype_bytes(self) -> int:
        return self.config.dtype_bytes

    @property
    def weight_hbm_bytes(self) -> int:
        d = self.dtype_bytes
        return (sum((s.out_features - s.host_rows) * s.in_features * d for s in self.linears)
                + sum((e.num_experts - e.host_experts) * e.expert_elements * d for e in self.experts))

    @property
    def weight_host_bytes(self) -> int:
        d = self.dtype_bytes
        return (sum(s.host_rows * s.in_features * d for s in self.linears)
                + sum(e.host_experts * e.expert_elements * d for e in self.experts))

    @property
    def kv_hbm_bytes(self) -> int:
        return sum((c.batch - c.host_seqs) * c.seq_bytes(self.dtype_bytes) for c in self.caches)

    @property
    def kv_host_bytes(self) -> int:
        return sum(c.host_seqs * c.seq_bytes(self.dtype_bytes) for c in self.caches)

    @property
    def hbm_bytes(self) -> int:
        """Bytes the model keeps in HBM: weight rows, KV sequences, norms, biases, position tables."""
        return self.weight_hbm_bytes + self.kv_hbm_bytes + self.other_hbm_bytes

    @property
    def pinned_bytes(self) -> int:
        """Bytes pinned in host memory: weight rows, KV sequences, an untied input embedding."""
        return self.weight_host_bytes + self.kv_host_bytes + self.embedding_host_bytes

    @property
    def offloaded_bytes(self) -> int:
        """Host bytes of what the planner plans (weights and KV; not the input embedding)."""
        return self.weight_host_bytes + self.kv_host_bytes

    @property
    def ratios(self) -> dict[str, float]:
        """Realised offload ratio per linear (and experts) module name."""
        return {**{s.name: s.ratio for s in self.linears}, **{e.name: e.ratio for e in self.experts}}


def check_model(model: nn.Module) -> tuple[ModelConfig, torch.dtype]:
    """The planner's ``ModelConfig`` for a supported Hugging Face decoder, and its weight dtype."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "get_input_embeddings"):
        raise InvalidArgumentError(
            f"model must be a Hugging Face transformers model, got {type(model).__name__}")
    data = config.to_dict()
    kind = data.get("model_type")
    if kind not in SUPPORTED_MODEL_TYPES:
        raise InvalidArgumentError(
            f"model_type {kind!r} is not supported; allowed: {', '.join(SUPPORTED_MODEL_TYPES)}")
    if kind == "opt" and data.get("word_embed_proj_dim", data["hidden_size"]) != data["hidden_size"]:
        raise InvalidArgumentError("OPT with word_embed_proj_dim != hidden_size (project_in/out layers) is "
                                   "not supported: the planner has no op for those projections")
    linears = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise InvalidArgumentError("the model has no nn.Linear modules to offload (already offloaded?)")
    dtypes = {m.weight.dtype for _, m in linears} | {
        getattr(m, p).dtype for _, m in model.named_modules()
        if all(isinstance(getattr(m, q, None), torch.Tensor) for q in EXPERT_PARAMS) for p in EXPERT_PARAMS}
    if len(dtypes) != 1 or not dtypes <= set(HALF_DTYPES):
        raise InvalidArgumentError(
            f"the model's linear weights must all be bfloat16 or all float16 (the split kernels' dtypes), "
            f"got {sorted(str(d) for d in dtypes)}; convert with model.to(torch.bfloat16) first")
    for name, m in linears:
        if m.in_features % K_MULTIPLE:
            raise InvalidArgumentError(
                f"{name}: in_features = {m.in_features} must be a multiple of {K_MULTIPLE}")
    dtype = dtypes.pop()
    cfg = config_from_hf(data, name=getattr(config, "name_or_path", "") or str(kind))
    return replace(cfg, dtype=str(dtype).removeprefix("torch.")), dtype


def op_of_linear(name: str) -> str | None:
    """The planner op a linear module of this name belongs to (``L3.qkv_proj``, ``lm_head``), or None."""
    if name == "lm_head" or name.endswith(".lm_head"):
        return "lm_head"
    match = _IN_LAYER.search(name)
    if match and match.group(2) in LINEAR_KINDS:
        return f"L{match.group(1)}.{LINEAR_KINDS[match.group(2)]}"
    return None


def map_linears(model: nn.Module, ops: list[Op], dtype_bytes: int) -> dict[str, list[tuple[str, nn.Linear]]]:
    """Every ``nn.Linear`` of ``model`` by planner op; an unmapped linear, an op without modules or
    modules whose bytes differ from their op's is an error naming them."""
    by_op: dict[str, list[tuple[str, nn.Linear]]] = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            op = op_of_linear(name)
            if op is None:
                raise InvalidArgumentError(f"linear module '{name}' matches no planner op (known names: "
                                           f"{', '.join(sorted(LINEAR_KINDS))}, lm_head)")
            by_op.setdefault(op, []).append((name, module))
    for op in ops:
        if op.kind in ("attention", "experts"):
            continue
        mods = by_op.get(op.name)
        if not mods:
            raise InvalidArgumentError(f"planner op '{op.name}' has no linear module in the model")
        held = sum(m.in_features * m.out_features * dtype_bytes for _, m in mods)
        if held != op.weight_bytes:
            raise InvalidArgumentError(
                f"op '{op.name}': the config gives {int(op.weight_bytes)} bytes but modules "
                f"{', '.join(n for n, _ in mods)} hold {held}; the model's shapes disagree with its config")
    extra = set(by_op) - {op.name for op in ops}
    if extra:
        raise InvalidArgumentError(f"linear modules for ops the config does not describe: {sorted(extra)}")
    return by_op


def map_experts(model: nn.Module, ops: list[Op], dtype_bytes: int) -> dict[str, tuple[str, nn.Module]]:
    """Every experts module (3-D ``gate_up_proj`` and ``down_proj``) of ``model`` by planner op
    (``L3.experts``); one that is missing, extra or whose bytes differ from its op's is an error."""
    found: dict[str, tuple[str, nn.Module]] = {}
    for name, module in model.named_modules():
        params = [getattr(module, p, None) for p in EXPERT_PARAMS]
        if not all(isinstance(t, torch.Tensor) and t.dim() == 3 for t in params):
            continue
        match = _IN_LAYER.search(name)
        if match is None:
            raise InvalidArgumentError(f"experts module '{name}' is not inside a decoder layer")
        found[f"L{match.group(1)}.experts"] = (name, module)
    wanted = {op.name: op for op in ops if op.kind == "experts"}
    if set(found) != set(wanted):
        raise InvalidArgumentError(f"the config gives experts ops {sorted(wanted)} but the model has experts "
                                   f"modules for {sorted(found)}")
    for op_name, (name, module) in found.items():
        gate_up, down = (getattr(module, p) for p in EXPERT_PARAMS)
        e, two_i, h = gate_up.shape
        if tuple(down.shape) != (e, h, two_i // 2) or two_i % 2:
            raise InvalidArgumentError(f"{name}: gate_up_proj {tuple(gate_up.shape)} and down_proj "
                                       f"{tuple(down.shape)} are not E x 2I x H and E x H x I")
        held = (gate_up.numel() + down.numel()) * dtype_bytes
        if held != wanted[op_name].weight_bytes:
            raise InvalidArgumentError(
                f"op '{op_name}': the config gives {int(wanted[op_name].weight_bytes)} bytes but {name} "
                f"holds {held}; the model's shapes disagree with its config")
        if h % K_MULTIPLE or (two_i // 2) % K_MULTIPLE:
            raise InvalidArgumentError(f"{name}: hidden ({h}) and intermediate ({two_i // 2}) sizes must be "
                                       f"multiples of {K_MULTIPLE}")
    return found


def host_rows_at_least(n_rows: int, ratio: float) -> int:
    """The fewest host rows >= ``ratio * n_rows`` (less a relative 1e-12 for rounding) that the
    split allows: 0, N, or N minus whole tiles. ``host_rows_for_ratio(n_rows, rows / n_rows)``
    gives the same count back, so a ``SplitWeight`` built at that ratio holds exactly these rows."""
    target = ratio * n_rows * (1 - 1e-12)
    if target <= 0:
        return 0
    rows = n_rows - max(0, math.floor((n_rows - target) / TILE_ROWS)) * TILE_ROWS
    if host_rows_for_ratio(n_rows, rows / n_rows) != rows:
        raise AssertionError(f"{rows} host rows of {n_rows} is not a split SplitWeight makes")
    return rows


def workspace_bytes(cfg: ModelConfig, batch: int, max_seq_len: int) -> int:
    """HBM for the largest transients of a forward: a prefill of ``batch`` x ``max_seq_len``
    tokens at once (one layer's q/k/v, MLP intermediates (k experts' for MoE) and hidden states,
    its K/V gathered onto the device, a causal mask of a byte per entry), the last position's
    float32 logits, one expert's weights copied from host memory (MoE), plus
    FIXED_WORKSPACE_BYTES. An estimate meant to err high; ``workspace_gib`` overrides it."""
    d = cfg.dtype_bytes
    tokens = batch * max_seq_len
    q_dim, kv_dim = cfg.num_attention_heads * cfg.head_dim, cfg.num_key_value_heads * cfg.head_dim
    # a MoE token runs k experts' MLPs, and the prefill loop copies one host expert to the device
    mlp_copies = cfg.experts_per_token if cfg.is_moe else 1
    expert_copy = 3 * cfg.hidden_size * cfg.intermediate_size * d if cfg.is_moe else 0
    per_token = (q_dim + 2 * kv_dim + 3 * cfg.intermediate_size * mlp_copies + 3 * cfg.hidden_size) * d
    return (tokens * per_token + 2 * tokens * kv_dim * d + batch * max_seq_len * max_seq_len
            + 4 * batch * cfg.vocab_size + expert_copy + FIXED_WORKSPACE_BYTES)


def _unique_tensors(model: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    seen: set[int] = set()
    named = (*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False))
    for name, t in named:
        if id(t) not in seen:
            seen.add(id(t))
            yield name, t


def _settle(linears: list[LinearSplit], experts: list[ExpertsSplit], caches: list[CacheSplit],
            required_bytes: float | None, d: int) -> tuple[list, list, list]:
    """With ``required_bytes`` (a GPU budget): what rounding left short goes to the linears
    (16-row tiles), only past their room to whole experts, one at a time, to the layers holding
    fewest in host memory, and past those to the KV sequences."""
    if required_bytes is None:
        return linears, experts, caches
    offloaded = (sum(s.host_rows * s.in_features * d for s in linears)
                 + sum(c.host_seqs * c.seq_bytes(d) for c in caches)
                 + sum(e.host_experts * e.expert_elements * d for e in experts))
    short = required_bytes - offloaded
    linear_room = sum((s.out_features - s.host_rows) * s.in_features * d for s in linears)
    in_hbm = linear_room + sum((e.num_experts - e.host_experts) * e.expert_elements * d for e in experts)
    if short > 0 and linear_room > 0:
        share = min(1.0, short / linear_room)
        linears = [replace(s, host_rows=host_rows_at_least(
            s.out_features, (s.host_rows + share * (s.out_features - s.host_rows)) / s.out_features))
            for s in linears]
    experts = list(experts)
    left = short - min(short, linear_room)
    while left > 0 and any(e.host_experts < e.num_experts for e in experts):
        i = min((i for i, e in enumerate(experts) if e.host_experts < e.num_experts),
                key=lambda i: (experts[i].host_experts, i))
        experts[i] = replace(experts[i], host_experts=experts[i].host_experts + 1)
        left -= experts[i].expert_elements * d
    if short > in_hbm:  # every linear row and expert is already in host memory: round sequences up
        caches = [replace(c, host_seqs=c.batch) for c in caches]
    return linears, experts, caches


def _split_time_s(ops, linears, experts, caches, d: int, hw) -> float:
    """The cost model's step time with these splits' host bytes per op (realised ratios)."""
    from smemkit.offload.costmodel import op_time

    host: dict[str, float] = {}
    for s in linears:
        host[s.op] = host.get(s.op, 0.0) + s.host_rows * s.in_features * d
    for e in experts:
        host[e.op] = host.get(e.op, 0.0) + e.host_experts * e.expert_elements * d
    for c in caches:
        host[c.op] = host.get(c.op, 0.0) + c.host_seqs * c.seq_bytes(d)
    return math.fsum(op_time(op, host.get(op.name, 0.0) / op.weight_bytes if op.weight_bytes else 0.0, hw)
                     for op in ops)


def layout_time_s(layout: OffloadLayout, hw) -> float:
    """The cost model's step time at ``layout``'s realised ratios (whole 16-row tiles, whole
    experts, whole sequences: what the model holds, not the planner's continuous ratios)."""
    return _split_time_s(layout.ops, layout.linears, layout.experts, layout.caches, layout.dtype_bytes, hw)


def make_layout(model: nn.Module, cfg: ModelConfig, dtype: torch.dtype, ops: list[Op], plan: Plan, *,
                batch: int, max_seq_len: int, required_bytes: float | None, workspace: int,
                hw=None) -> OffloadLayout:
    """Turn ``plan`` (over ``ops``) into whole rows, experts and sequences; with ``required_bytes``
    (a GPU budget), top the linears up until at least that many bytes are offloaded. ``hw`` (the
    planner's ``Hardware``) lets the experts' rounding pick the layout the cost model prefers."""
    by_op = map_linears(model, ops, cfg.dtype_bytes)
    ratio_of = dict(zip((op.name for op in ops), plan.ratios, strict=True))
    linears = [LinearSplit(n, op, m.out_features, m.in_features, m.bias is not None,
                           host_rows_at_least(m.out_features, ratio_of[op]))
               for op, mods in by_op.items() for n, m in mods]
    caches = [CacheSplit(op.layer, op.name, batch, cfg.num_key_value_heads, cfg.head_dim, max_seq_len,
                         host_seqs_for_ratio(batch, ratio_of[op.name]))
              for op in ops if op.kind == "attention"]
    experts = [ExpertsSplit(name, op, int(m.gate_up_proj.shape[0]), int(m.gate_up_proj.shape[2]),
                            int(m.down_proj.shape[2]), 0)
               for op, (name, m) in map_experts(model, ops, cfg.dtype_bytes).items()]
    d = cfg.dtype_bytes
    sizes, shares = [e.num_experts for e in experts], [ratio_of[e.op] for e in experts]
    planned = math.fsum(r * n for r, n in zip(shares, sizes, strict=True))
    # whole experts: the fewest holding the plan's expert bytes; under a budget with the cost model
    # at hand, that or one fewer or none, whichever settled layout predicts the shortest step (an
    # expert in host memory makes its layer host-bound, so rounding phase-1 bytes up to a whole
    # expert can cost more than the linears' tiles holding them instead)
    totals = [math.ceil(planned * (1 - 1e-12))]
    if hw is not None and required_bytes is not None:  # a ratio asks for its share: no choice there
        totals = sorted({0, math.floor(planned * (1 + 1e-12)), totals[0]})
    best = None
    for total in totals:
        counts = host_experts_across_layers(sizes, shares, total)
        rounded = [replace(e, host_experts=n) for e, n in zip(experts, counts, strict=True)]
        candidate = _settle(linears, rounded, caches, required_bytes, d)
        cost = 0.0 if hw is None else _split_time_s(ops, candidate[0], candidate[1], candidate[2], d, hw)
        if best is None or cost < best[0]:
            best = (cost, candidate)
    linears, experts, caches = best[1]
    embedding_module = model.get_input_embeddings()
    head = model.get_output_embeddings()
    tied = head is not None and head.weight is embedding_module.weight
    emb_name = next(n for n, m in model.named_modules() if m is embedding_module)
    split_params = ({f"{s.name}.weight" for s in linears} | {f"{emb_name}.weight"}
                    | {f"{e.name}.{p}" for e in experts for p in EXPERT_PARAMS})
    other = sum(t.numel() * t.element_size() for n, t in _unique_tensors(model) if n not in split_params)
    emb_host = 0 if tied else embedding_module.weight.numel() * embedding_module.weight.element_size()
    return OffloadLayout(cfg, tuple(ops), plan, tuple(linears), tuple(caches), emb_name, tied, emb_host,
                         other, workspace, dtype, experts=tuple(experts))


def check_fit(layout: OffloadLayout, *, gpu_budget: int | None, hbm_free: int | None,
              pinned_free: int | None) -> None:
    """Raise :class:`OffloadFitError` when the layout needs more HBM (weights + KV + the rest + the
    workspace) than ``gpu_budget`` or ``hbm_free`` allows, or more pinned memory than ``pinned_free``."""
    need_hbm = layout.hbm_bytes + layout.workspace_bytes + layout.staging_bytes
    parts = (f"weights {layout.weight_hbm_bytes}, KV {layout.kv_hbm_bytes}, norms/biases/positions "
             f"{layout.other_hbm_bytes}, workspace {layout.workspace_bytes}, staging slots "
             f"{layout.staging_bytes} bytes")
    if gpu_budget is not None and need_hbm > gpu_budget:
        raise OffloadFitError("the GPU budget (gpu_mem_gib)", need_hbm, gpu_budget,
                              f"HBM holds {parts}; raise gpu_mem_gib or lower batch or max_seq_len.")
    if hbm_free is not None and need_hbm > hbm_free:
        raise OffloadFitError("free HBM", need_hbm, hbm_free,
                              f"HBM would hold {parts}; offload more (a larger ratio or a smaller "
                              "gpu_mem_gib) or free device memory.")
    need_pinned = layout.pinned_bytes
    if pinned_free is not None and need_pinned > pinned_free:
        raise OffloadFitError(
            "pinned host memory", need_pinned, pinned_free,
            f"host memory would hold weights {layout.weight_host_bytes}, KV {layout.kv_host_bytes}, input "
            f"embedding {layout.embedding_host_bytes} bytes; offload less or free host memory.")
