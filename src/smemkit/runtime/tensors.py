"""Argument checks for tensors handed to kernels, with errors that name the argument."""

from __future__ import annotations

from typing import TYPE_CHECKING

from smemkit.errors import InvalidArgumentError

if TYPE_CHECKING:
    import torch


def check_tensor(
    name: str,
    t: object,
    *,
    dtype: torch.dtype | tuple[torch.dtype, ...] | None = None,
    ndim: int | None = None,
    shape: tuple[int | None, ...] | None = None,
    device: torch.device | None = None,
    alignment: int = 16,
) -> torch.Tensor:
    """Return ``t`` if it is a contiguous CUDA tensor meeting every stated requirement.

    ``shape`` entries of None match any size. ``device`` (when given) must equal the tensor's.
    The data pointer must be ``alignment``-byte aligned (vector loads need 16).
    """
    import torch

    if not isinstance(t, torch.Tensor):
        raise InvalidArgumentError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if not t.is_cuda:
        raise InvalidArgumentError(f"{name} must be on a CUDA device, got device {t.device}")
    if device is not None and t.device != device:
        raise InvalidArgumentError(f"{name} is on {t.device} but the other inputs are on {device}")
    if dtype is not None:
        allowed = dtype if isinstance(dtype, tuple) else (dtype,)
        if t.dtype not in allowed:
            names = ", ".join(str(d).replace("torch.", "") for d in allowed)
            raise InvalidArgumentError(
                f"{name} has dtype {str(t.dtype).replace('torch.', '')}; allowed: {names}"
            )
    if ndim is not None and t.dim() != ndim:
        raise InvalidArgumentError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if shape is not None and (t.dim() != len(shape) or any(
        want is not None and got != want for got, want in zip(t.shape, shape, strict=False)
    )):
        want_text = "(" + ", ".join("*" if s is None else str(s) for s in shape)
        want_text += ",)" if len(shape) == 1 else ")"
        raise InvalidArgumentError(
            f"{name} must have shape {want_text}, got {tuple(t.shape)}"
        )
    if not t.is_contiguous():
        raise InvalidArgumentError(
            f"{name} must be contiguous (strides {t.stride()} for shape {tuple(t.shape)}); "
            f"call .contiguous() first"
        )
    if t.numel() and t.data_ptr() % alignment:
        raise InvalidArgumentError(
            f"{name}'s data pointer is not {alignment}-byte aligned (offset view?); "
            f"call .clone() to get an aligned copy"
        )
    return t
