"""Offload a Hugging Face decoder: plan per-op ratios, split its linears and KV cache, keep ``generate``.

``offload_model(model, gpu_mem_gib=... | ratio=..., batch=..., max_seq_len=...)`` plans the
model's own ops (``decode_ops`` of the ``ModelConfig`` its config gives) against the device
profile, lays every byte out (``hf_layout``), refuses a layout that does not fit before anything
moves, then replaces each ``nn.Linear`` (q/k/v/o, gate/up/down or fc1/fc2, lm_head) with a split
linear at its op's ratio, each MoE layer's experts with :class:`~.experts.OffloadedExperts`
(whole experts in host memory), the input embedding with a ``SplitEmbedding``, and allocates a
:class:`~.hf_cache.BatchSplitCache` for the plan's batch and context. ``load_offloaded`` builds
the same from a safetensors checkpoint; both run :func:`offload_from_source`, which reads each
tensor once from a :class:`TensorSource` and places it before reading the next.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload import (
    Hardware,
    Op,
    Plan,
    decode_ops,
    greedy_plan,
    hardware_from_profile,
    required_offload_bytes,
    uniform_plan,
)
from smemkit.offload.experts import OffloadedExperts, place_experts
from smemkit.offload.hf_cache import BatchSplitCache
from smemkit.offload.hf_layout import (
    OffloadFitError,
    OffloadLayout,
    check_fit,
    check_model,
    make_layout,
    workspace_bytes,
)
from smemkit.offload.hf_modules import SplitEmbedding
from smemkit.offload.placement import GpuPlacement, Placement
from smemkit.offload.prefetch import parent_of, stage_offloaded, staging_bytes_of

GIB = 2**30
PLANS = ("greedy", "uniform")


class TensorSource(Protocol):
    """Named tensors to build a model from: ``get`` hands each out (on any device), once."""

    def names(self) -> set[str]: ...

    def get(self, name: str) -> torch.Tensor: ...


class ModuleTensors:
    """The tensors a model already holds, handed out once each and then forgotten, so a
    replaced weight is freed as soon as its module is."""

    def __init__(self, model: nn.Module) -> None:
        self._tensors = dict(model.named_parameters(remove_duplicate=False))
        self._tensors.update(model.named_buffers(remove_duplicate=False))

    def names(self) -> set[str]:
        return set(self._tensors)

    def get(self, name: str) -> torch.Tensor:
        return self._tensors.pop(name).detach()

    def clear(self) -> None:
        self._tensors.clear()


@dataclass
class OffloadedModel:
    """A model offloaded by :func:`offload_model` / ``load_offloaded``, with its plan and cache.

    ``layout.plan`` is the planner's per-op plan; ``ratios`` the realised ratio of every split
    linear (whole 16-row tiles); ``hbm_bytes`` / ``pinned_bytes`` what the model holds in each
    memory (weights, KV cache, the rest), ``workspace_bytes`` the HBM the check kept free for a
    forward.
    """

    model: nn.Module
    layout: OffloadLayout
    kv_cache: BatchSplitCache
    placement: Placement
    prefetcher: object = None  # the LayerPrefetcher of host_path="prefetch"
    _engine: object = field(default=None, repr=False, compare=False)

    @property
    def plan(self) -> Plan:
        return self.layout.plan

    @property
    def ratios(self) -> dict[str, float]:
        return self.layout.ratios

    @property
    def hbm_bytes(self) -> int:
        return self.layout.hbm_bytes

    @property
    def pinned_bytes(self) -> int:
        return self.layout.pinned_bytes

    @property
    def workspace_bytes(self) -> int:
        return self.layout.workspace_bytes

    def cache(self) -> BatchSplitCache:
        """The model's split KV cache, emptied (pass it to ``generate`` as ``past_key_values``)."""
        self.kv_cache.reset()
        return self.kv_cache

    def engine(self):
        """The model's :class:`~.decode_graph.DecodeEngine` (made on first use, then kept: its
        captured graph is replayed by later calls). It shares the split cache's buffers."""
        if self._engine is None:
            from smemkit.offload.decode_graph import decode_engine

            self._engine = decode_engine(self)
        return self._engine

    def generate(self, *args, graph: bool | None = None, **kwargs):
        """``model.generate`` with the emptied split cache passed under the name this transformers
        version takes (``past_key_values``; ``cache`` from 5.2x on).

        ``graph=True`` / ``graph=False`` instead runs greedy decoding on :meth:`engine` (decode
        step replayed as one CUDA graph, or the same step eagerly): ``generate(input_ids,
        max_new_tokens=T, graph=True)`` returns the (B, L + T) tokens, as ``model.generate`` does."""
        if graph is not None:
            ids = args[0] if args else kwargs.pop("input_ids")
            steps = kwargs.pop("max_new_tokens", None)
            kwargs.pop("attention_mask", None)  # the engine decodes unpadded batches only
            for key in ("do_sample", "min_new_tokens"):
                kwargs.pop(key, None)
            if kwargs:
                raise InvalidArgumentError(f"generate(graph=...) takes input_ids and max_new_tokens only, "
                                           f"not {', '.join(sorted(kwargs))}")
            return self.engine().generate(ids, steps, graph=graph)
        params = inspect.signature(self.model.forward).parameters
        kwargs["cache" if "cache" in params else "past_key_values"] = self.cache()
        return self.model.generate(*args, **kwargs)

    def free(self) -> None:
        """Release the pinned memory (weights, cache, embedding) now; the model is unusable after."""
        self._engine = None  # its graph points at the memory freed below
        if self.prefetcher is not None:
            self.prefetcher.free()  # its hooks, slots and the offloaded linears it staged
            self.prefetcher = None
        for module in self.model.modules():
            if hasattr(module, "split_weight") or isinstance(module, OffloadedExperts):
                module.free()
        self.placement.free()


HOST_PATHS = ("direct", "prefetch")
STAGING_ROUNDS = 6  # re-plans under gpu_mem_gib until the staging slots fit what was reserved


def resolve_host_path(host_path: str | None, placement: Placement) -> str:
    """``host_path`` checked, or the default: ``"prefetch"`` on a GPU placement (measured faster
    from r = 2.5 % up, benchmarks/results/h200/offload_e2e.json), ``"direct"`` elsewhere."""
    if host_path is None:
        return "prefetch" if isinstance(placement, GpuPlacement) else "direct"
    if host_path not in HOST_PATHS:
        raise InvalidArgumentError(f"host_path must be one of {', '.join(HOST_PATHS)}, got {host_path!r}")
    if host_path == "prefetch" and not isinstance(placement, GpuPlacement):
        raise InvalidArgumentError("host_path='prefetch' stages host rows with CUDA streams: it needs a GPU "
                                   "placement (use host_path='direct')")
    return host_path


def _check_options(gpu_mem_gib: float | None, ratio: float | None, plan: str | None, batch: int,
                   max_seq_len: int, workspace_gib: float | None, offload_kv: bool = True) -> str:
    if not isinstance(offload_kv, bool):
        raise InvalidArgumentError(f"offload_kv must be True or False, got {offload_kv!r}")
    if (gpu_mem_gib is None) == (ratio is None):
        raise InvalidArgumentError("give exactly one of gpu_mem_gib (an HBM budget in GiB) and ratio "
                                   "(the share of weight and KV bytes to offload, in [0, 1])")
    for label, value in (("gpu_mem_gib", gpu_mem_gib), ("ratio", ratio), ("workspace_gib", workspace_gib)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
            raise InvalidArgumentError(f"{label} must be a finite number >= 0, got {value!r}")
    if ratio is not None and ratio > 1:
        raise InvalidArgumentError(f"ratio must be in [0, 1], got {ratio!r}")
    for label, value in (("batch", batch), ("max_seq_len", max_seq_len)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{label} must be a positive integer, got {value!r}")
    chosen = plan or ("greedy" if ratio is None else "uniform")
    if chosen not in PLANS:
        raise InvalidArgumentError(f"plan={plan!r}; allowed: {', '.join(PLANS)}")
    return chosen


def _device_bytes(tensors: Iterable[torch.Tensor], device: torch.device) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if t.device == device and id(t) not in seen:
            seen.add(id(t))
            total += t.numel() * t.element_size()
    return total


def weights_only(method: Callable[[Sequence[Op], Hardware, float], Plan], ops: Sequence[Op], hw: Hardware,
                 required: float) -> Plan:
    """``method``'s plan over the linear ops alone, with every KV cache (attention op) kept in HBM:
    the plan of a weight-offload run. Attention ops get ratio 0 and their all-HBM time."""
    movable = [op for op in ops if op.kind != "attention"]
    sub = method(movable, hw, required)
    base = uniform_plan(ops, hw, 0.0)
    picked = iter(zip(sub.ratios, sub.op_times, strict=True))
    ratios, times = [], []
    for op, t0 in zip(ops, base.op_times, strict=True):
        r, t = (0.0, t0) if op.kind == "attention" else next(picked)
        ratios.append(r)
        times.append(t)
    return replace(sub, ratios=tuple(ratios), op_times=tuple(times))


def plan_layout(model: nn.Module, *, gpu_mem_gib: float | None = None, ratio: float | None = None,
                plan: str | None = None, batch: int, max_seq_len: int, profile: str | None = None,
                workspace_gib: float | None = None, offload_kv: bool = True,
                host_path: str = "direct") -> OffloadLayout:
    """The layout ``offload_model`` would make, without checking it against a device or moving
    anything (``model`` may live on the meta device). ``host_path="prefetch"`` adds the staging
    slots to the HBM the layout needs (and, under ``gpu_mem_gib``, offloads enough more to pay
    for them)."""
    if host_path not in HOST_PATHS:
        raise InvalidArgumentError(f"host_path must be one of {', '.join(HOST_PATHS)}, got {host_path!r}")
    layout = _plan_layout(model, gpu_mem_gib=gpu_mem_gib, ratio=ratio, plan=plan, batch=batch,
                          max_seq_len=max_seq_len, profile=profile, workspace_gib=workspace_gib,
                          offload_kv=offload_kv, extra_hbm=0)
    if host_path == "direct":
        return layout
    def slots_of(lay: OffloadLayout) -> int:
        return staging_bytes_of({s.name: s.host_rows * s.in_features * lay.dtype_bytes for s in lay.linears})

    staging = slots_of(layout)
    if gpu_mem_gib is None:
        return replace(layout, staging_bytes=staging)
    # under a budget the slots are paid for by offloading more, which can grow the slots: re-plan
    # with the HBM they take reserved until the plan's own slots fit in what was reserved
    for _ in range(STAGING_ROUNDS):
        layout = _plan_layout(model, gpu_mem_gib=gpu_mem_gib, ratio=ratio, plan=plan, batch=batch,
                              max_seq_len=max_seq_len, profile=profile, workspace_gib=workspace_gib,
                              offload_kv=offload_kv, extra_hbm=staging)
        needed = slots_of(layout)
        if needed <= staging:
            return replace(layout, staging_bytes=needed)
        staging = needed
    raise OffloadFitError(
        "the GPU budget (gpu_mem_gib)", layout.hbm_bytes + layout.workspace_bytes + needed,
        int(gpu_mem_gib * GIB),
        f"the staging slots of host_path='prefetch' grow with what is offloaded ({needed} bytes after "
        f"{STAGING_ROUNDS} re-plans: the model has too few layers to share slots); raise gpu_mem_gib or "
        "use host_path='direct'.")


def _plan_layout(model: nn.Module, *, gpu_mem_gib: float | None, ratio: float | None, plan: str | None,
                 batch: int, max_seq_len: int, profile: str | None, workspace_gib: float | None,
                 offload_kv: bool, extra_hbm: int) -> OffloadLayout:
    chosen = _check_options(gpu_mem_gib, ratio, plan, batch, max_seq_len, workspace_gib, offload_kv)
    from smemkit.hw.profile import select_profile

    cfg, dtype = check_model(model)
    ops = decode_ops(cfg, batch, max_seq_len)
    hw = hardware_from_profile(select_profile(profile)[0])
    workspace = (workspace_bytes(cfg, batch, max_seq_len) if workspace_gib is None
                 else int(workspace_gib * GIB))
    probe = make_layout(model, cfg, dtype, ops, uniform_plan(ops, hw, 0.0), batch=batch,
                        max_seq_len=max_seq_len, required_bytes=None, workspace=workspace)
    required = None
    if gpu_mem_gib is not None:
        budget = int(gpu_mem_gib * GIB)
        fixed = probe.other_hbm_bytes + workspace + extra_hbm  # HBM the plan cannot move
        if fixed > budget:
            raise OffloadFitError(
                "the GPU budget (gpu_mem_gib)", fixed, budget,
                f"Whatever is offloaded, norms/biases/positions ({probe.other_hbm_bytes} bytes), the "
                f"workspace ({workspace} bytes) and any staging slots ({extra_hbm} bytes) stay in HBM; "
                "raise gpu_mem_gib or lower batch or max_seq_len.")
        required = required_offload_bytes(ops, budget - fixed)
        planned = required
        movable = math.fsum(op.weight_bytes for op in ops if offload_kv or op.kind != "attention")
        if required > movable * (1 + 1e-12):  # the KV cache kept in HBM leaves too little for weights
            kept = math.fsum(op.weight_bytes for op in ops) - movable
            raise OffloadFitError(
                "the GPU budget (gpu_mem_gib)", int(fixed + kept), budget,
                f"with every weight offloaded, the KV cache kept in HBM ({int(kept)} bytes), "
                f"norms/biases/positions, the workspace and any staging slots ({extra_hbm} bytes) still "
                "exceed it; raise gpu_mem_gib, offload the KV cache or lower batch or max_seq_len.")
    else:
        planned = ratio * math.fsum(op.weight_bytes for op in ops if offload_kv or op.kind != "attention")
    method = greedy_plan if chosen == "greedy" else uniform_plan
    per_op = method(ops, hw, planned) if offload_kv else weights_only(method, ops, hw, planned)
    return make_layout(model, cfg, dtype, ops, per_op, batch=batch, max_seq_len=max_seq_len,
                       required_bytes=required, workspace=workspace, hw=hw)


def offload_model(model: nn.Module, *, gpu_mem_gib: float | None = None, ratio: float | None = None,
                  plan: str | None = None, batch: int, max_seq_len: int, profile: str | None = None,
                  workspace_gib: float | None = None, placement: Placement | None = None,
                  offload_kv: bool = True, host_path: str | None = None) -> OffloadedModel:
    """Offload ``model`` (a Hugging Face Llama, Mistral, Qwen2/3, OPT, Mixtral or Qwen3-MoE in
    bf16/fp16) in place.

    Give ``gpu_mem_gib`` (HBM for weights + KV + the rest + workspace; the planner offloads what
    does not fit, by ``plan``: ``"greedy"``, the default, or ``"uniform"``) or ``ratio`` (offload
    that share of the planned weight + KV bytes, by default the same share of every op).
    ``batch`` and ``max_seq_len`` size the KV cache and the plan; ``profile`` names the device
    profile (default: the current GPU's); ``workspace_gib`` overrides the workspace estimate.
    ``placement`` defaults to :class:`~.placement.GpuPlacement` on the current device.
    ``offload_kv=False`` keeps every KV cache in HBM and offloads weights only (``ratio`` is then
    the share of the weight bytes). ``host_path`` says how the linears read their host rows:
    ``"prefetch"`` (the default on a GPU) stages them into HBM slots a decoder layer ahead on the
    copy engine (:mod:`.prefetch`), ``"direct"`` reads them inside each op (``split_linear``'s
    paths; the only one on :class:`~.placement.CpuPlacement`).

    Raises ``OffloadFitError`` (missing bytes named) before anything is moved when HBM, the budget
    or pinned memory is short. Returns an :class:`OffloadedModel`; use ``result.generate(...)`` or
    ``model.generate(..., past_key_values=result.cache())``.
    """
    placement = placement or GpuPlacement()
    layout = plan_layout(model, gpu_mem_gib=gpu_mem_gib, ratio=ratio, plan=plan, batch=batch,
                         max_seq_len=max_seq_len, profile=profile, workspace_gib=workspace_gib,
                         offload_kv=offload_kv, host_path=resolve_host_path(host_path, placement))
    tensors = ModuleTensors(model)
    resident = _device_bytes([*model.parameters(), *model.buffers()], placement.device)
    return offload_from_source(model, tensors, layout, placement,
                               gpu_budget=None if gpu_mem_gib is None else int(gpu_mem_gib * GIB),
                               resident_bytes=resident)


def _missing(model: nn.Module, source: TensorSource, layout: OffloadLayout,
             aliases: dict[str, str]) -> list[str]:
    """Parameters and persistent buffers the source cannot supply (checked before anything moves)."""
    have = source.names()
    want = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    for mod_name, module in model.named_modules():
        for b in module._buffers:
            if module._buffers[b] is not None and b not in module._non_persistent_buffers_set:
                want.add(f"{mod_name}.{b}" if mod_name else b)
    if layout.tied_embedding:
        want.discard(f"{layout.embedding}.weight")
    return sorted(n for n in want if n not in have and aliases.get(n) not in have)


def _read(source: TensorSource, name: str, aliases: dict[str, str]) -> torch.Tensor:
    return source.get(name if name in source.names() or name not in aliases else aliases[name])


def offload_from_source(model: nn.Module, source: TensorSource, layout: OffloadLayout,
                        placement: Placement, *, gpu_budget: int | None,
                        resident_bytes: int = 0) -> OffloadedModel:
    """Check ``layout`` against ``placement``'s memory, then give ``model`` (real or on the meta
    device) its split linears, split embedding and placed tensors, each read once from ``source``."""
    free = placement.hbm_free_bytes()
    check_fit(layout, gpu_budget=gpu_budget, hbm_free=None if free is None else free + resident_bytes,
              pinned_free=placement.pinned_free_bytes())
    head = model.get_output_embeddings()
    head_name = next(n for n, m in model.named_modules() if m is head)
    emb_weight = f"{layout.embedding}.weight"
    aliases = {f"{head_name}.weight": emb_weight} if layout.tied_embedding else {}
    missing = _missing(model, source, layout, aliases)
    if missing:
        raise InvalidArgumentError(f"the source has no tensor for {len(missing)} parameter(s) or buffer(s): "
                                   f"{', '.join(missing[:8])}")
    dtype = layout.dtype
    with torch.no_grad():
        for split in layout.linears:
            parent, leaf = parent_of(model, split.name)
            weight = _read(source, f"{split.name}.weight", aliases).to(dtype)
            bias = _read(source, f"{split.name}.bias", aliases).to(dtype) if split.has_bias else None
            module = placement.split_linear(weight, bias, split.ratio)
            del weight, bias
            if module.split_weight.host_rows != split.host_rows:
                raise AssertionError(f"{split.name}: placed {module.split_weight.host_rows} host rows, "
                                     f"planned {split.host_rows}")
            setattr(parent, leaf, module)
        for split in layout.experts:
            parent, leaf = parent_of(model, split.name)
            gate_up = source.get(f"{split.name}.gate_up_proj").to(dtype)
            down = source.get(f"{split.name}.down_proj").to(dtype)
            module = place_experts(placement, gate_up, down, split.host_experts, getattr(parent, leaf).act_fn,
                                   dtype)
            del gate_up, down
            setattr(parent, leaf, module)
        _place_embedding(model, source, layout, placement, head_name)
        _place_rest(model, source, layout, placement)
    if isinstance(source, ModuleTensors):
        source.clear()
    cache = BatchSplitCache.from_splits(layout.caches, dtype, placement)
    prefetcher = None
    if layout.staging_bytes:
        prefetcher = stage_offloaded(model, [s.name for s in layout.linears if s.host_rows])
    return OffloadedModel(model, layout, cache, placement, prefetcher)


def _place_embedding(model: nn.Module, source: TensorSource, layout: OffloadLayout, placement: Placement,
                     head_name: str) -> None:
    parent, leaf = parent_of(model, layout.embedding)
    old = getattr(parent, leaf)
    padding = getattr(old, "padding_idx", None)
    if layout.tied_embedding:
        split = model.get_submodule(head_name).split_weight
        view = getattr(split, "host_cuda_view", None) or (lambda: placement.device_view(split.host))
        new = SplitEmbedding(split.hbm, split.host, padding)  # the table was read once, as the head
    else:
        weight = source.get(f"{layout.embedding}.weight")
        host = placement.pinned_empty(tuple(weight.shape), layout.dtype)
        host.copy_(weight)
        del weight
        view = lambda: placement.device_view(host)  # noqa: E731
        new = SplitEmbedding(placement.hbm_empty((0, host.shape[1]), layout.dtype), host, padding)
    new.attach_host_view(view)
    setattr(parent, leaf, new)


def _place_rest(model: nn.Module, source: TensorSource, layout: OffloadLayout, placement: Placement) -> None:
    """Norms, biases of unsplit modules, position tables and buffers: onto the device. Buffers the
    source lacks (rotary ``inv_freq``: non-persistent, derived from the config) are rebuilt by
    constructing their module again from its config when they are still on the meta device."""
    names = source.names()
    rebuild: list[str] = []
    for mod_name, module in list(model.named_modules()):
        if isinstance(module, SplitEmbedding) or hasattr(module, "split_weight"):
            continue
        prefix = f"{mod_name}." if mod_name else ""
        for pname, param in list(module._parameters.items()):
            if param is None:
                continue
            # present: _missing checked every parameter; read, placed and dropped before the next
            placed = placement.to_hbm(source.get(prefix + pname).to(param.dtype))
            module._parameters[pname] = nn.Parameter(placed, requires_grad=False)
            del placed
        for bname, buf in list(module._buffers.items()):
            if buf is None:
                continue
            if prefix + bname in names:
                module._buffers[bname] = placement.to_hbm(source.get(prefix + bname).to(buf.dtype))
            elif buf.is_meta:
                rebuild.append(mod_name)
            else:
                module._buffers[bname] = placement.to_hbm(buf)
    for mod_name in dict.fromkeys(rebuild):
        old = model.get_submodule(mod_name)
        if not hasattr(old, "config") or any(True for _ in old.parameters()):
            raise InvalidArgumentError(f"module '{mod_name}' has buffers the checkpoint does not hold and "
                                       "cannot be rebuilt from its config")
        parent, leaf = parent_of(model, mod_name)
        fresh = type(old)(old.config)
        for bname, buf in fresh.named_buffers():
            owner, _, leaf_name = bname.rpartition(".")
            fresh.get_submodule(owner)._buffers[leaf_name] = placement.to_hbm(buf)
        setattr(parent, leaf, fresh)
    left = [n for n, t in (*model.named_parameters(), *model.named_buffers()) if t.is_meta]
    if left:
        raise InvalidArgumentError(f"tensors still on the meta device after loading: {', '.join(left[:8])}")
