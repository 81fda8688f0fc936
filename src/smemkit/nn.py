"""Drop-in modules whose backward passes run smemkit's reduction-reuse kernels.

They take torch's signatures (``torch.nn.LayerNorm``, ``torch.nn.Softmax``,
``torch.nn.functional.layer_norm`` / ``softmax``: the same parameter names, order and defaults,
checked by tests/cpu/test_signatures.py), so swapping the import is the whole change. The kernels
reduce over the last dimension only; any other choice is an InvalidArgumentError naming the
argument, raised at construction when the value alone rules it out, else at the call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from smemkit.errors import InvalidArgumentError, is_int, is_number
from smemkit.reduction import torch_ops  # noqa: F401  (registers torch.ops.smemkit.*)


def _last_dim_shape(normalized_shape: object) -> tuple[int]:
    """``normalized_shape`` as torch takes it (an int, a list, a torch.Size), one dimension only."""
    shape = (normalized_shape,) if is_int(normalized_shape) else normalized_shape
    if not isinstance(shape, Sequence) or isinstance(shape, str) or len(shape) != 1 \
            or not is_int(shape[0]) or shape[0] < 1:
        raise InvalidArgumentError(
            f"normalized_shape={normalized_shape!r}: smemkit's LayerNorm normalizes over the last "
            "dimension only; give its size as an int or a 1-element list (e.g. 4096 or [4096])")
    return (int(shape[0]),)


def _check_eps(eps: object) -> float:
    if not is_number(eps) or not math.isfinite(eps) or eps < 0:
        raise InvalidArgumentError(f"eps={eps!r}: must be a finite number >= 0")
    return float(eps)


def _check_width(input: Tensor, normalized_shape: tuple[int]) -> None:
    if input.dim() < 1 or input.shape[-1] != normalized_shape[0]:
        raise InvalidArgumentError(f"input of shape {tuple(input.shape)}: its last dimension must be "
                                   f"normalized_shape[0] = {normalized_shape[0]}")


class LayerNorm(nn.Module):
    """``torch.nn.LayerNorm`` over the last dimension, backward through ``layernorm_bwd``.

    The input gradient comes from the cluster/staged kernel (statistics recomputed from x, so
    nothing extra is saved); weight and bias gradients are column sums done by PyTorch.
    """

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _last_dim_shape(normalized_shape)
        self.eps = _check_eps(eps)
        self.elementwise_affine = bool(elementwise_affine)
        factory = {"device": device, "dtype": dtype}
        weight = torch.ones(self.normalized_shape, **factory)
        offset = torch.zeros(self.normalized_shape, **factory)
        if self.elementwise_affine:
            self.weight = nn.Parameter(weight)
            self.bias = nn.Parameter(offset) if bias else None
        else:
            self.weight, self.bias = None, None
        if self.weight is None:
            self.register_buffer("_unit_weight", weight, persistent=False)
        if self.bias is None:
            self.register_buffer("_zero_bias", offset, persistent=False)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            nn.init.ones_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        _check_width(input, self.normalized_shape)
        weight = self.weight if self.weight is not None else self._unit_weight
        bias = self.bias if self.bias is not None else self._zero_bias
        return torch.ops.smemkit.layer_norm(input, weight, bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


def _check_dim(dim: object) -> int | None:
    """A softmax ``dim`` that can name the last dimension of some input: None (torch's implicit
    choice), -1, or a non-negative index (checked against the input at the call)."""
    if dim is not None and (not is_int(dim) or dim < -1):
        raise InvalidArgumentError(f"dim={dim!r}: smemkit's softmax runs over the last dimension only; "
                                   "give dim=-1 (or the last index)")
    return dim


def _resolve_dim(dim: int | None, input: Tensor) -> None:
    ndim = input.dim()
    # torch's implicit choice for dim=None (torch.nn.functional._get_softmax_dim)
    chosen = dim if dim is not None else (0 if ndim in (0, 1, 3) else 1)
    if ndim < 1 or chosen not in (-1, ndim - 1):
        implicit = f" (torch's implicit choice: dim {chosen})" if dim is None else ""
        raise InvalidArgumentError(f"dim={dim!r} on a {ndim}-d input{implicit}: smemkit's softmax runs "
                                   "over the last dimension only; give dim=-1")


class Softmax(nn.Module):
    """``torch.nn.Softmax`` over the last dimension, whose backward recomputes p from the logits."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = _check_dim(dim)

    def forward(self, input: Tensor) -> Tensor:
        _resolve_dim(self.dim, input)
        return torch.ops.smemkit.softmax(input)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """``torch.nn.functional.softmax`` over the last dimension (``dtype`` casts the input first,
    as torch does; ``_stacklevel`` is accepted for the signature and unused)."""
    _resolve_dim(_check_dim(dim), input)
    if dtype is not None:
        input = input.to(dtype)
    return torch.ops.smemkit.softmax(input)


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """``torch.nn.functional.layer_norm`` over the last dimension (weight 1 and bias 0 when None)."""
    shape = _last_dim_shape(normalized_shape)
    _check_width(input, shape)
    if weight is None:
        weight = torch.ones(shape, dtype=input.dtype, device=input.device)
    if bias is None:
        bias = torch.zeros(shape, dtype=input.dtype, device=input.device)
    return torch.ops.smemkit.layer_norm(input, weight, bias, _check_eps(eps))
