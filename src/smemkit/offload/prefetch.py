"""Layer-ahead staging of host weight rows: each decoder layer's host rows (and the LM head's)
are copied by the copy engine, on a side stream, into one of a few HBM staging slots while the
layer before it computes; the layer then multiplies its HBM rows and its staged rows as two GEMMs
(:class:`TwoPartLinear`). FlexGen's and vLLM's prefetch offloader's design, built on stream
events only, so a whole decode step captures into one CUDA graph.

The link never waits on compute: unit u + 1's copy is issued as unit u starts (after u's own
block has landed), and the next step's first block is copied during the LM head. On the H200's
PCIe link this holds a weight-offloaded decode step at 1.00-1.02x the host-link floor from r = 5 %
up, where the per-op split paths take 1.08-1.50x (benchmarks/results/h200/offload_e2e.json). Its
cost is HBM: the staging slots (:attr:`LayerPrefetcher.staging_bytes`, two to three units' host
rows).

:func:`stage_offloaded` replaces an offloaded model's split linears with staged ones (the
``host_path="prefetch"`` of ``offload_model``); ``baselines.prefetch_offload`` builds the same
from a plain model for the benchmark's baseline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from smemkit.errors import InvalidArgumentError

_LAYER = re.compile(r"^(.*\.layers\.\d+)\.")
_LAYER_INDEX = re.compile(r"\.layers\.(\d+)$")


class TwoPartLinear(nn.Module):
    """``y = [x @ hbm.T, x @ host.T] (+ bias)``: ``hbm`` the first rows on the GPU, ``host`` the
    last rows as a CUDA tensor (a UVA alias of pinned memory or a view of a staging slot)."""

    def __init__(self, hbm: torch.Tensor, host: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        # the weight parts are plain attributes, as OffloadedLinear's are (model.to() must not move
        # a staging view or a host alias); the bias is a buffer, as nn.Linear's state has it
        self.hbm, self.host = hbm, host
        self.register_buffer("bias", bias)
        self.in_features = hbm.shape[1]
        self.out_features = hbm.shape[0] + host.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.host.shape[0] == 0:
            return F.linear(x, self.hbm, self.bias)
        if self.hbm.shape[0] == 0:
            y = F.linear(x, self.host)
        else:
            y = torch.cat([F.linear(x, self.hbm), F.linear(x, self.host)], dim=-1)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"host rows={self.host.shape[0]}")


def parent_of(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    """The module holding submodule ``name`` and the attribute it is held under."""
    path, _, leaf = name.rpartition(".")
    return (model.get_submodule(path) if path else model), leaf


@dataclass
class StagedUnit:
    """One decoder layer's host rows (or one linear's outside the layers): what is copied into its
    staging slot before ``module`` (whose forward starts the unit) runs."""

    module: nn.Module
    slot: int
    copies: list[tuple[torch.Tensor, int]]  # (flat pinned source, element offset in the slot)
    keep: list[object] = field(default_factory=list)  # owners of the pinned sources

    @property
    def nbytes(self) -> int:
        return sum(src.numel() * src.element_size() for src, _ in self.copies)


class LayerPrefetcher:
    """Double-buffered copies of each unit's host block into HBM staging slots (see the module
    docstring). Made by :func:`build_prefetcher`; ``free()`` takes its hooks off and releases the
    slots, the pinned blocks and the offloaded linears it staged (the model is unusable after)."""

    def __init__(self, units: Sequence[StagedUnit], slots: Sequence[torch.Tensor], buffers: list,
                 device: torch.device) -> None:
        self.units, self.slots, self.buffers, self.device = list(units), list(slots), buffers, device
        self.copy_stream = torch.cuda.Stream(device)
        self._copied = [torch.cuda.Event() for _ in self.units]
        self._freed = [torch.cuda.Event() for _ in self.units]
        self._slot_user: dict[int, int] = {}  # slot -> the unit of this forward that used it last
        self._expected = 0  # the unit the next pre-hook should be for
        self._hooks = []
        for i, unit in enumerate(self.units):
            self._hooks.append(unit.module.register_forward_pre_hook(self._pre_hook(i)))
            self._hooks.append(unit.module.register_forward_hook(self._post_hook(i)))
        # the invariant every forward starts from: unit 0's block is in its slot
        self._copy(0)
        torch.cuda.current_stream(device).wait_event(self._copied[0])
        torch.cuda.synchronize(device)

    @property
    def staging_bytes(self) -> int:
        return sum(s.numel() * s.element_size() for s in self.slots)

    @property
    def host_bytes(self) -> int:
        return sum(u.nbytes for u in self.units)

    def _copy(self, i: int) -> None:
        unit = self.units[i]
        slot = self.slots[unit.slot]
        with torch.cuda.stream(self.copy_stream):
            for src, offset in unit.copies:
                slot[offset: offset + src.numel()].copy_(src, non_blocking=True)
        self._copied[i].record(self.copy_stream)

    def _pre_hook(self, i: int):
        def hook(module, args):
            compute = torch.cuda.current_stream(self.device)
            n = len(self.units)
            if i != self._expected:
                # the last forward stopped early (no LM head, an exception) or units ran out of order:
                # this unit's block may not be in its slot, so copy it and wait for it first
                self._slot_user = {}
                self.copy_stream.wait_stream(compute)
                self._copy(i)
                compute.wait_event(self._copied[i])
            elif i == 0:
                # a new forward: unit 0's block was copied and joined by the previous forward's end
                self._slot_user = {}
                self.copy_stream.wait_stream(compute)  # the copy stream forks from this forward
            else:
                compute.wait_event(self._copied[i])
            nxt = (i + 1) % n
            self._expected = nxt
            if nxt == i:  # a single unit: its block stays in its slot
                return
            user = self._slot_user.get(self.units[nxt].slot)
            if user is not None:  # the slot's last user in this forward must be done with it
                self.copy_stream.wait_event(self._freed[user])
            self._copy(nxt)
        return hook

    def _post_hook(self, i: int):
        def hook(module, args, output):
            compute = torch.cuda.current_stream(self.device)
            self._freed[i].record(compute)
            self._slot_user[self.units[i].slot] = i
            if i == len(self.units) - 1 and i > 0:  # the next forward's first block must have landed
                compute.wait_event(self._copied[0])
        return hook

    def _remove_hooks(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    def free(self) -> None:
        self._remove_hooks()
        torch.cuda.synchronize(self.device)
        for b in self.buffers:
            b.free()
        self.buffers.clear()
        for unit in self.units:
            for owner in unit.keep:
                if hasattr(owner, "free"):
                    owner.free()
            unit.keep.clear()
        self.slots.clear()


def staging_slots(n_units: int) -> list[int]:
    """The staging slot of each of ``n_units`` units: 0, 1, 0, 1, ..., and a third slot for the
    last unit when ``n_units`` is odd. Units run in a cycle (the last unit of a step is followed
    by the first of the next), and the block of unit u + 1 is copied while unit u computes, so a
    unit may never share a slot with the unit before it, the wrap included."""
    if n_units < 1:
        raise InvalidArgumentError(f"n_units must be at least 1, got {n_units}")
    slots = [i % 2 for i in range(n_units)]
    if n_units % 2 == 1 and n_units > 1:
        slots[-1] = 2
    return slots


def slot_sizes(unit_sizes: Sequence[int]) -> list[int]:
    """The size of each staging slot for units of these sizes (any unit: bytes or elements), in
    unit order: each slot holds the largest unit :func:`staging_slots` gives it."""
    slots = staging_slots(len(unit_sizes))
    size = [0] * (max(slots) + 1)
    for slot, n in zip(slots, unit_sizes, strict=True):
        size[slot] = max(size[slot], n)
    return size


def group_units(names: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Linear names grouped into units: (the module path that starts the unit, its linears), the
    decoder layers in index order first, then every other linear (the LM head) on its own."""
    groups: dict[str, list[str]] = {}
    for name in names:
        m = _LAYER.match(name)
        groups.setdefault(m.group(1) if m else name, []).append(name)

    def order(key: str) -> tuple[int, int]:
        m = _LAYER_INDEX.search(key)
        return (0, int(m.group(1))) if m else (1, 0)

    return [(k, groups[k]) for k in sorted(groups, key=order)]


StagedParts = dict[str, tuple[torch.Tensor, torch.Tensor, "torch.Tensor | None", object]]


def build_prefetcher(model: nn.Module, parts: StagedParts, *, blocks: bool) -> LayerPrefetcher:
    """Replace each linear ``name`` of ``parts`` (name -> (HBM rows on the GPU, host rows in pinned
    memory, bias, the owner of the host rows)) by a :class:`TwoPartLinear` reading its host rows
    from a staging slot, and return the prefetcher that fills the slots. With ``blocks`` the owner
    is ignored and each unit's host rows are one pinned block copied once (one copy per unit);
    otherwise each linear's pinned rows are copied where they are (one copy per linear)."""
    from smemkit.offload.pinned import PinnedBuffer

    if not parts:
        raise InvalidArgumentError("no linear to stage")
    units_by_key = group_units(list(parts))
    slot_of = staging_slots(len(units_by_key))
    first_hbm = next(iter(parts.values()))[0]
    device, dtype = first_hbm.device, first_hbm.dtype
    unit_elems = [sum(parts[n][1].numel() for n in names) for _, names in units_by_key]
    slots = [torch.empty(max(e, 1), dtype=dtype, device=device) for e in slot_sizes(unit_elems)]
    buffers: list = []
    units: list[StagedUnit] = []
    for (key, names), s, elems in zip(units_by_key, slot_of, unit_elems, strict=True):
        copies: list[tuple[torch.Tensor, int]] = []
        keep: list[object] = []
        block = None
        if blocks and elems:
            buf = PinnedBuffer(elems * first_hbm.element_size(), device=device.index)
            buffers.append(buf)
            block = buf.tensor(dtype, (elems,))
            copies.append((block, 0))
        offset = 0
        for name in names:
            hbm, host, bias, owner = parts[name]
            rows, k = host.shape
            if block is not None:
                block[offset: offset + rows * k].copy_(host.reshape(-1))
            elif rows:
                copies.append((host.reshape(-1), offset))
                keep.append(owner)
            staged = slots[s][offset: offset + rows * k].view(rows, k)
            offset += rows * k
            parent, leaf = parent_of(model, name)
            setattr(parent, leaf, TwoPartLinear(hbm, staged, bias))
        units.append(StagedUnit(model.get_submodule(key), s, copies, keep))
    torch.cuda.synchronize(device)
    return LayerPrefetcher(units, slots, buffers, device)


def stage_offloaded(model: nn.Module, names: Sequence[str]) -> LayerPrefetcher:
    """Stage the host rows of the offloaded linears ``names`` of ``model`` (``OffloadedLinear``
    modules) layer by layer: their HBM rows and pinned rows stay where they are; the modules are
    replaced by :class:`TwoPartLinear` and kept alive by the prefetcher (``free()`` releases them)."""
    parts = {}
    for name in names:
        module = model.get_submodule(name)
        split = getattr(module, "split_weight", None)
        if split is None:
            raise InvalidArgumentError(f"'{name}' is not an offloaded linear (no split_weight)")
        parts[name] = (split.hbm, split.host, module.bias, module)
    return build_prefetcher(model, parts, blocks=False)


def staging_bytes_of(host_bytes: dict[str, int]) -> int:
    """HBM the staging slots take for linears with these host bytes (name -> bytes; zero-byte
    linears are not staged): each slot is as large as the largest unit that uses it."""
    names = [n for n, b in host_bytes.items() if b > 0]
    if not names:
        return 0
    return sum(slot_sizes([sum(host_bytes[n] for n in members) for _, members in group_units(names)]))
