"""``smemkit.quant.rowwise_int8``: symmetric per-row int8 quantisation in one kernel."""

from __future__ import annotations

import torch
from torch import Tensor

from smemkit.reduction import torch_ops  # noqa: F401  (registers torch.ops.smemkit.*)


def rowwise_int8(x: Tensor) -> tuple[Tensor, Tensor]:
    """(q, scale) with scale = max|row| / 127 (at least 1e-12) and q = clamp(round(x / scale)),
    rounding half to even. The kernel multiplies by 1/scale, so at exact ties a code can differ
    by one from true division.

    Dequantise with ``q.float() * scale.unsqueeze(-1)``.
    """
    return torch.ops.smemkit.rowwise_int8(x)
