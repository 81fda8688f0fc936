"""The two offloading designs other engines use, built on the same row split as smemkit's, so the
end-to-end benchmark compares like with like (same model, same weights, same host rows).

- **UVA zero-copy** (:func:`uva_offload`): each linear's host rows stay in pinned memory and
  cuBLAS reads them in place through a CUDA alias of that memory, as vLLM's ``--cpu-offload-gb``
  does. Nothing is staged; every step reads the host rows over the link inside the GEMMs.
- **Layer-wise prefetcher** (:func:`prefetch_offload`): the host rows of each decoder layer (and
  of the LM head) are one pinned block, copied by the copy engine on a side stream into one of a
  few HBM staging slots while the layer before it computes (double buffering; FlexGen's and
  vLLM's prefetch offloader's design). A layer waits only for its own block; the block after it
  starts as soon as it starts, so the link never waits on compute, and the next step's first
  block is copied during the LM head. Stream waits and copies are ordinary stream work, so the
  whole step captures into one CUDA graph. Its cost is HBM: the staging slots
  (:attr:`LayerPrefetcher.staging_bytes`).

Both keep a linear's first rows in HBM and multiply the two parts as two GEMMs joined along the
output features (:class:`TwoPartLinear`), bias after the join.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.hf_layout import OffloadLayout
from smemkit.offload.pinned import PinnedBuffer

_LAYER = re.compile(r"^(.*\.layers\.\d+)\.")


class TwoPartLinear(nn.Module):
    """``y = [x @ hbm.T, x @ host.T] (+ bias)``: ``hbm`` the first rows on the GPU, ``host`` the
    last rows as a CUDA tensor (a UVA alias of pinned memory or a view of a staging slot)."""

    def __init__(self, hbm: torch.Tensor, host: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.hbm, self.host, self.bias = hbm, host, bias
        self.in_features = hbm.shape[1]
        self.out_features = hbm.shape[0] + host.shape[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.host.shape[0] == 0:
            return F.linear(x, self.hbm, self.bias)
        parts = [F.linear(x, self.host)] if self.hbm.shape[0] == 0 else [F.linear(x, self.hbm),
                                                                         F.linear(x, self.host)]
        y = torch.cat(parts, dim=-1) if len(parts) > 1 else parts[0]
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"host rows={self.host.shape[0]}")


def _parent(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    path, _, leaf = name.rpartition(".")
    return (model.get_submodule(path) if path else model), leaf


def _splits(model: nn.Module, layout: OffloadLayout) -> list[tuple[str, nn.Linear, int]]:
    """(name, module, host rows) of every linear the layout splits, checked against the model."""
    found = []
    for split in layout.linears:
        try:
            module = model.get_submodule(split.name)
        except AttributeError:
            raise InvalidArgumentError(f"the layout names linear '{split.name}', which the model "
                                       "lacks") from None
        if not isinstance(module, nn.Linear) or tuple(module.weight.shape) != (split.out_features,
                                                                               split.in_features):
            raise InvalidArgumentError(f"'{split.name}' is not an nn.Linear of shape "
                                       f"({split.out_features}, {split.in_features})")
        if module.weight.device.type != "cuda":
            raise InvalidArgumentError(f"'{split.name}' must be on a CUDA device (the model is moved first)")
        found.append((split.name, module, split.host_rows))
    return found


def _hbm_rows(module: nn.Linear, host_rows: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    w = module.weight.detach()
    hbm = w[: w.shape[0] - host_rows].clone()
    bias = None if module.bias is None else module.bias.detach().clone()
    return hbm, bias


@dataclass
class UvaModel:
    """A model whose host rows cuBLAS reads in place; ``free()`` releases the pinned memory."""

    model: nn.Module
    buffers: list[PinnedBuffer]
    host_bytes: int

    def free(self) -> None:
        for b in self.buffers:
            b.free()
        self.buffers.clear()


def uva_offload(model: nn.Module, layout: OffloadLayout) -> UvaModel:
    """Replace every linear of ``layout`` (a model on its GPU) by a :class:`TwoPartLinear` whose
    host rows live in pinned memory, read through a CUDA alias (zero-copy)."""
    buffers: list[PinnedBuffer] = []
    host_bytes = 0
    for name, module, rows in _splits(model, layout):
        hbm, bias = _hbm_rows(module, rows)
        w = module.weight.detach()
        if rows:
            buf = PinnedBuffer(rows * w.shape[1] * w.element_size(), device=w.device.index)
            buffers.append(buf)
            buf.tensor(w.dtype, (rows, w.shape[1])).copy_(w[w.shape[0] - rows:])
            host = buf.cuda_view(w.dtype, (rows, w.shape[1]))
            host_bytes += buf.nbytes
        else:
            host = w[:0]
        parent, leaf = _parent(model, name)
        setattr(parent, leaf, TwoPartLinear(hbm, host, bias))
        del module
    torch.cuda.synchronize()
    return UvaModel(model, buffers, host_bytes)


@dataclass
class _Unit:
    """The host rows of one decoder layer (or of a linear outside the layers): one pinned block."""

    module: nn.Module  # whose forward starts this unit's use of the block
    host: torch.Tensor | None  # the pinned block (flat)
    nbytes: int
    slot: int


class LayerPrefetcher:
    """Double-buffered copies of each unit's host block into HBM staging slots (see the module
    docstring). Made by :func:`prefetch_offload`; ``remove()`` takes its hooks off."""

    def __init__(self, units: Sequence[_Unit], slots: Sequence[torch.Tensor], buffers: list[PinnedBuffer],
                 device: torch.device) -> None:
        self.units, self.slots, self.buffers, self.device = list(units), list(slots), buffers, device
        self.copy_stream = torch.cuda.Stream(device)
        self._copied = [torch.cuda.Event() for _ in self.units]
        self._freed = [torch.cuda.Event() for _ in self.units]
        self._slot_user: dict[int, int] = {}  # slot -> the unit of this forward that used it last
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
        if unit.nbytes:
            with torch.cuda.stream(self.copy_stream):
                self.slots[unit.slot][: unit.host.numel()].copy_(unit.host, non_blocking=True)
        self._copied[i].record(self.copy_stream)

    def _pre_hook(self, i: int):
        def hook(module, args):
            compute = torch.cuda.current_stream(self.device)
            if i == 0:
                # a new forward: unit 0's block was copied and joined by the previous forward's end
                self._slot_user = {}
                self.copy_stream.wait_stream(compute)  # the copy stream forks from this forward
            else:
                compute.wait_event(self._copied[i])
            nxt = (i + 1) % len(self.units)
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
            if i == len(self.units) - 1:  # the next forward's first block must have landed
                compute.wait_event(self._copied[0])
        return hook

    def remove(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks.clear()

    def free(self) -> None:
        self.remove()
        torch.cuda.synchronize(self.device)
        for b in self.buffers:
            b.free()
        self.buffers.clear()
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


def prefetch_offload(model: nn.Module, layout: OffloadLayout) -> LayerPrefetcher:
    """Replace every linear of ``layout`` (a model on its GPU) by a :class:`TwoPartLinear` whose
    host rows are staged by a :class:`LayerPrefetcher` (returned; keep it alive while the model
    runs). Units are the decoder layers in order, then the other split linears (the LM head),
    each its own unit; slots alternate 0, 1 (a third slot for the last unit when the count is
    odd, so neighbours across the step boundary never share one)."""
    splits = _splits(model, layout)
    if not splits:
        raise InvalidArgumentError("the layout splits no linear")
    groups: dict[str, list[tuple[str, nn.Linear, int]]] = {}
    for entry in splits:
        m = _LAYER.match(entry[0])
        groups.setdefault(m.group(1) if m else entry[0], []).append(entry)

    def order(key: str) -> tuple[int, int]:
        m = re.search(r"\.layers\.(\d+)$", key)
        return (0, int(m.group(1))) if m else (1, 0)

    keys = sorted(groups, key=order)
    slot_of = staging_slots(len(keys))
    device = splits[0][1].weight.device
    dtype = splits[0][1].weight.dtype
    esize = torch.empty((), dtype=dtype).element_size()
    # each unit's linears' host rows, back to back in its block and in its slot
    unit_bytes = [sum(rows * mod.in_features * esize for _, mod, rows in groups[k]) for k in keys]
    slot_bytes = [0] * (max(slot_of) + 1)
    for s, b in zip(slot_of, unit_bytes, strict=True):
        slot_bytes[s] = max(slot_bytes[s], b)
    slots = [torch.empty(max(b // esize, 1), dtype=dtype, device=device) for b in slot_bytes]
    buffers: list[PinnedBuffer] = []
    units: list[_Unit] = []
    for key, s, nbytes in zip(keys, slot_of, unit_bytes, strict=True):
        block = None
        if nbytes:
            buf = PinnedBuffer(nbytes, device=device.index)
            buffers.append(buf)
            block = buf.tensor(dtype, (nbytes // esize,))
        offset = 0
        for name, module, rows in groups[key]:
            hbm, bias = _hbm_rows(module, rows)
            k = module.in_features
            w = module.weight.detach()
            if rows:
                block[offset: offset + rows * k].copy_(w[w.shape[0] - rows:].reshape(-1))
            staged = slots[s][offset: offset + rows * k].view(rows, k)
            offset += rows * k
            parent, leaf = _parent(model, name)
            setattr(parent, leaf, TwoPartLinear(hbm, staged, bias))
        starts = model.get_submodule(key) if order(key)[0] == 0 else model.get_submodule(groups[key][0][0])
        units.append(_Unit(starts, block, nbytes, s))
    torch.cuda.synchronize(device)
    return LayerPrefetcher(units, slots, buffers, device)
