"""Drop-in modules whose backward passes run smemkit's reduction-reuse kernels."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from smemkit.reduction import torch_ops  # noqa: F401  (registers torch.ops.smemkit.*)


class LayerNorm(nn.Module):
    """``torch.nn.LayerNorm`` over the last dimension, backward through ``layernorm_bwd``.

    The input gradient comes from the cluster/staged kernel (statistics recomputed from x, so
    nothing extra is saved); weight and bias gradients are column sums done by PyTorch.
    """

    def __init__(self, normalized_shape: int, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(normalized_shape, int):
            raise TypeError(f"normalized_shape must be an int (the last dimension), got {normalized_shape!r}")
        self.normalized_shape = (normalized_shape,)
        self.eps = eps
        factory = {"device": device, "dtype": dtype}
        weight = torch.ones(normalized_shape, **factory)
        offset = torch.zeros(normalized_shape, **factory)
        if elementwise_affine:
            self.weight = nn.Parameter(weight)
            self.bias = nn.Parameter(offset) if bias else None
        else:
            self.weight, self.bias = None, None
        if self.weight is None:
            self.register_buffer("_unit_weight", weight, persistent=False)
        if self.bias is None:
            self.register_buffer("_zero_bias", offset, persistent=False)

    def forward(self, x: Tensor) -> Tensor:
        weight = self.weight if self.weight is not None else self._unit_weight
        bias = self.bias if self.bias is not None else self._zero_bias
        return torch.ops.smemkit.layer_norm(x, weight, bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, affine={self.weight is not None}"


class Softmax(nn.Module):
    """Softmax over the last dimension whose backward recomputes p from the logits."""

    def forward(self, z: Tensor) -> Tensor:
        return torch.ops.smemkit.softmax(z)


def softmax(z: Tensor) -> Tensor:
    """Functional form of :class:`Softmax` (last dimension)."""
    return torch.ops.smemkit.softmax(z)
