"""Build an offloaded model straight from a safetensors checkpoint, never holding all of it at once.

``load_offloaded(directory, gpu_mem_gib=... | ratio=..., batch=..., max_seq_len=...)`` reads
config.json, builds the model's skeleton on the meta device (no memory), lays out and checks the
plan exactly as ``offload_model`` does, then reads the checkpoint one tensor at a time
(``safe_open(...).get_tensor``): a split linear's weight goes into its HBM rows and pinned rows,
anything else onto the device, and the tensor read from the file is dropped before the next is
read. Pageable host memory therefore peaks at about one tensor (two while a float32 tensor is
converted to the model's dtype), and HBM holds only what the plan puts there.

Shards are found through ``model.safetensors.index.json`` when present, else every
``*.safetensors`` file of the directory; tensor names may omit the model's base prefix
(``decoder.layers.0...`` for ``model.decoder.layers.0...``), as older OPT checkpoints do. A MoE
checkpoint's per-expert matrices (Mixtral's ``block_sparse_moe.experts.<e>.w1``, Qwen3-MoE's
``mlp.experts.<e>.gate_proj``) are stacked into the experts module's tensors one layer at a time
(:class:`HubExpertsTensors`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload.hf_model import OffloadedModel, offload_from_source, plan_layout, resolve_host_path
from smemkit.offload.model_source import CONFIG_NAME, checkpoint_files
from smemkit.offload.placement import GpuPlacement, Placement

GIB = 2**30
HALF_DTYPES = (torch.bfloat16, torch.float16)


class SafetensorsCheckpoint:
    """The tensors of a checkpoint directory by name, each read from its shard on request.

    ``prefix`` is the model's base prefix (``"model"``): a name the files lack is looked up
    without it. Use as a context manager (or call ``close``) to release the open shards.
    """

    def __init__(self, directory: str | Path, prefix: str = "") -> None:
        from safetensors import safe_open

        self._stack = contextlib.ExitStack()
        self._where: dict[str, object] = {}
        self._prefix = f"{prefix}." if prefix else ""
        for path in checkpoint_files(directory):
            try:
                handle = self._stack.enter_context(safe_open(str(path), framework="pt", device="cpu"))
            except Exception as exc:  # safetensors raises its own error types for a bad file
                self._stack.close()
                raise InvalidArgumentError(f"{path}: cannot open as safetensors: {exc}") from exc
            for name in handle.keys():  # noqa: SIM118 (a safetensors handle, not a dict)
                if name in self._where:
                    self._stack.close()
                    raise InvalidArgumentError(
                        f"tensor '{name}' appears in more than one shard of {directory}")
                self._where[name] = handle
        self._names = set(self._where)
        if self._prefix:
            self._names |= {self._prefix + n for n in self._where if not n.startswith(self._prefix)}

    def _key(self, name: str) -> str:
        if name in self._where:
            return name
        if self._prefix and name.startswith(self._prefix) and name[len(self._prefix):] in self._where:
            return name[len(self._prefix):]
        raise InvalidArgumentError(f"the checkpoint has no tensor '{name}'")

    def names(self) -> set[str]:
        """Every name ``get`` answers (file names, and file names with the prefix added)."""
        return self._names

    def get(self, name: str) -> torch.Tensor:
        key = self._key(name)
        return self._where[key].get_tensor(key)

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> SafetensorsCheckpoint:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# How released MoE checkpoints name one expert's matrices, which transformers 5.x loads into one
# experts module of 3-D tensors (its conversion mapping): the decoder layer's MoE block name, then
# the gate, up and down matrices' names under ``experts.<e>``.
HUB_EXPERT_NAMES = (
    ("block_sparse_moe", "w1", "w3", "w2"),  # Mixtral
    ("mlp", "gate_proj", "up_proj", "down_proj"),  # Qwen3-MoE (and Qwen2-MoE-style files)
)
_EXPERTS_SUFFIX = ".mlp.experts."
_ROUTER_SUFFIX = ".mlp.gate.weight"


class HubExpertsTensors:
    """A tensor source that also answers a MoE model's ``...mlp.experts.gate_up_proj`` /
    ``down_proj`` (E x 2I x H, E x H x I) and ``...mlp.gate.weight`` from a checkpoint that stores
    each expert's matrices separately (``HUB_EXPERT_NAMES``), assembling one layer's experts when
    asked into one preallocated tensor: pageable memory then peaks at about one layer's experts
    (one projection's) plus one expert's matrix."""

    def __init__(self, source) -> None:
        self._source = source
        have = source.names()
        self._built: dict[str, tuple[str, ...]] = {}  # synthesized name -> the source names it reads
        for name in have:
            for block, gate, up, down in HUB_EXPERT_NAMES:
                marker = f".{block}.experts.0.{gate}.weight"
                if not name.endswith(marker):
                    continue
                layer = name[: -len(marker)]
                base = f"{layer}.{block}.experts"
                count = 0
                while f"{base}.{count}.{gate}.weight" in have:
                    count += 1
                experts = range(count)
                self._built[f"{layer}{_EXPERTS_SUFFIX}gate_up_proj"] = tuple(
                    f"{base}.{e}.{m}.weight" for e in experts for m in (gate, up))
                self._built[f"{layer}{_EXPERTS_SUFFIX}down_proj"] = tuple(
                    f"{base}.{e}.{down}.weight" for e in experts)
                router = f"{layer}.{block}.gate.weight"
                if router in have and f"{layer}{_ROUTER_SUFFIX}" not in have:
                    self._built[f"{layer}{_ROUTER_SUFFIX}"] = (router,)
        self._names = set(have) | set(self._built)

    def names(self) -> set[str]:
        return self._names

    def get(self, name: str) -> torch.Tensor:
        parts = self._built.get(name)
        if parts is None:
            return self._source.get(name)
        if len(parts) == 1:
            return self._source.get(parts[0])
        # one preallocated (E, rows, K) tensor, each expert's matrices copied into its slice
        gate_up = name.endswith("gate_up_proj")
        groups = list(zip(parts[::2], parts[1::2], strict=True)) if gate_up else [(d,) for d in parts]
        out = None
        for e, names in enumerate(groups):
            row = 0
            for part in names:
                t = self._source.get(part)
                if out is None:
                    out = torch.empty((len(groups), t.shape[0] * len(names), t.shape[1]), dtype=t.dtype)
                if t.dim() != 2 or t.shape[1] != out.shape[2] or row + t.shape[0] > out.shape[1]:
                    raise InvalidArgumentError(f"'{part}' has shape {tuple(t.shape)}; the other experts' "
                                               f"matrices for '{name}' are {tuple(out.shape[1:])}")
                out[e, row: row + t.shape[0]].copy_(t)
                row += t.shape[0]
                del t
        return out


def _model_dtype(config, dtype: torch.dtype | None) -> torch.dtype:
    if dtype is not None:
        if dtype not in HALF_DTYPES:
            raise InvalidArgumentError(f"dtype must be torch.bfloat16 or torch.float16, got {dtype}")
        return dtype
    declared = getattr(config, "dtype", None)
    return declared if declared in HALF_DTYPES else torch.bfloat16


def meta_skeleton(directory: str | Path, dtype: torch.dtype | None = None) -> torch.nn.Module:
    """The checkpoint's model built on the meta device in ``dtype`` (default: the checkpoint's
    when it is bf16/fp16, else bf16): every shape and name, no memory. No hub access."""
    from transformers import AutoConfig, AutoModelForCausalLM

    root = Path(directory)
    if not (root / CONFIG_NAME).is_file():
        raise InvalidArgumentError(f"{root} is not a checkpoint directory: it has no {CONFIG_NAME}")
    config = AutoConfig.from_pretrained(str(root), local_files_only=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, dtype=_model_dtype(config, dtype))
    return model.eval()


def load_offloaded(directory: str | Path, *, gpu_mem_gib: float | None = None, ratio: float | None = None,
                   plan: str | None = None, batch: int, max_seq_len: int, profile: str | None = None,
                   dtype: torch.dtype | None = None, workspace_gib: float | None = None,
                   placement: Placement | None = None,
                   checkpoint: SafetensorsCheckpoint | None = None,
                   host_path: str | None = None) -> OffloadedModel:
    """An offloaded model built from a safetensors checkpoint directory (config.json + shards).

    The options are ``offload_model``'s; ``dtype`` is the model's (bf16/fp16; tensors of another
    dtype are converted one at a time). ``checkpoint`` replaces the reader (tests count its reads).
    The plan is checked against the device before the first tensor is read.
    """
    model = meta_skeleton(directory, dtype)
    placement = placement or GpuPlacement()
    layout = plan_layout(model, gpu_mem_gib=gpu_mem_gib, ratio=ratio, plan=plan, batch=batch,
                         max_seq_len=max_seq_len, profile=profile, workspace_gib=workspace_gib,
                         host_path=resolve_host_path(host_path, placement))
    budget = None if gpu_mem_gib is None else int(gpu_mem_gib * GIB)
    def source(reader):
        return HubExpertsTensors(reader) if layout.experts else reader

    if checkpoint is not None:
        return offload_from_source(model, source(checkpoint), layout, placement, gpu_budget=budget)
    with SafetensorsCheckpoint(directory, prefix=getattr(model, "base_model_prefix", "")) as reader:
        return offload_from_source(model, source(reader), layout, placement, gpu_budget=budget)
