"""The two offloading designs other engines use, built on the same row split as smemkit's, so the
end-to-end benchmark compares like with like (same model, same weights, same host rows).

- **UVA zero-copy** (:func:`uva_offload`): each linear's host rows stay in pinned memory and
  cuBLAS reads them in place through a CUDA alias of that memory, as vLLM's ``--cpu-offload-gb``
  does. Nothing is staged; every step reads the host rows over the link inside the GEMMs.
- **Layer-wise prefetcher** (:func:`prefetch_offload`): the host rows of each decoder layer (and
  of the LM head) as one pinned block, staged into HBM a layer ahead by
  :class:`~.prefetch.LayerPrefetcher` (FlexGen's and vLLM's prefetch offloader's design; the
  machinery smemkit's own ``host_path="prefetch"`` uses, here over a plain model's linears).

Both keep a linear's first rows in HBM and multiply the two parts as two GEMMs joined along the
output features (:class:`~.prefetch.TwoPartLinear`), bias after the join.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.hf_layout import OffloadLayout
from smemkit.offload.pinned import PinnedBuffer
from smemkit.offload.prefetch import LayerPrefetcher, TwoPartLinear, build_prefetcher, parent_of


def _splits(model: nn.Module, layout: OffloadLayout) -> list[tuple[str, nn.Linear, int]]:
    """(name, module, host rows) of every linear the layout splits, checked against the model."""
    if layout.experts:
        # these designs stage or alias a linear's host rows; a MoE layer's experts would stay
        # whole in HBM and the comparison would not hold the same host bytes
        raise InvalidArgumentError("the UVA and prefetcher baselines offload linears only; this layout "
                                   f"also puts experts of {len(layout.experts)} MoE layers in host memory "
                                   "(compare MoE models with hbm or accelerate)")
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
            host = w.new_empty((0, w.shape[1]))  # not a view: it would keep the whole weight alive
        parent, leaf = parent_of(model, name)
        setattr(parent, leaf, TwoPartLinear(hbm, host, bias))
    torch.cuda.synchronize()
    return UvaModel(model, buffers, host_bytes)


def prefetch_offload(model: nn.Module, layout: OffloadLayout) -> LayerPrefetcher:
    """Replace every linear of ``layout`` (a model on its GPU) by a :class:`TwoPartLinear` whose
    host rows (one pinned block per unit) are staged by the returned
    :class:`~.prefetch.LayerPrefetcher` (keep it alive while the model runs)."""
    parts = {}
    for name, module, rows in _splits(model, layout):
        hbm, bias = _hbm_rows(module, rows)
        w = module.weight.detach()
        parts[name] = (hbm, w[w.shape[0] - rows:], bias, None)
    if not parts:
        raise InvalidArgumentError("the layout splits no linear")
    return build_prefetcher(model, parts, blocks=True)
