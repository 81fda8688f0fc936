"""The path rule of ``split_linear(path="auto")``: cuBLAS, the split GEMV kernel or the ring path.

A weight with no host rows runs as the plain all-HBM product in cuBLAS. Otherwise the shape alone
may decide (:func:`fixed_path`: the ring past KERNEL_MAX_ROWS input rows, the kernel when a ring
slot cannot hold 16 weight rows); else a memory-bound model of both paths at the device profile's
link rates picks the faster (:func:`path_times`, :func:`faster_path`).
"""

from __future__ import annotations

from functools import cache

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload.pinned import SplitWeight
from smemkit.offload.split_rule import (
    KERNEL_HBM_SLOWDOWN,
    KERNEL_HOST_FACTOR,
    KERNEL_MAX_ROWS,
    RING_COPY_OVERHEAD_S,
    auto_path,
    faster_path,
    fixed_path,
    path_times,
)

LINEAR_PATHS = ("auto", "kernel", "ring", "direct")
# The pure rule (constants, path_times, fixed_path, faster_path, auto_path) lives in split_rule so
# that `smemkit offload path` answers without torch; this module adds the lookup on a SplitWeight.
__all__ = ["KERNEL_HBM_SLOWDOWN", "KERNEL_HOST_FACTOR", "KERNEL_MAX_ROWS", "LINEAR_PATHS",
           "RING_COPY_OVERHEAD_S", "auto_path", "faster_path", "fixed_path", "linear_path", "path_times"]


@cache
def _link_rates(device_index: int) -> tuple[float, float]:
    """(B_g, B_h) in bytes/s from the GPU's device profile (the embedded H200's when none matches)."""
    from smemkit.hw.profile import select_profile
    from smemkit.offload.costmodel import hardware_from_profile

    with torch.cuda.device(device_index):
        hw = hardware_from_profile(select_profile(None)[0])
    return hw.hbm_bytes_per_s, hw.host_bytes_per_s


def linear_path(weight: SplitWeight, rows: int, path: str = "auto") -> str:
    """What ``split_linear`` runs for ``rows`` input rows: ``"cublas"`` (no host rows),
    ``"kernel"`` (split_gemv.cu), ``"ring"`` (:mod:`.ring_gemm`) or ``"direct"`` (only when asked
    for, :mod:`.direct_gemm`); ``"auto"`` by
    :func:`auto_path` (the kernel when a ring slot cannot hold 16 weight rows), else the path
    asked for. Past 8 rows the ring was the faster at 28 of 32 points of batch 16 and 32 (the
    four others at most 7 % slower; commit 9dda13a) and at all 28 of batch 64."""
    if path not in LINEAR_PATHS:
        raise InvalidArgumentError(f"path={path!r}; allowed: {', '.join(LINEAR_PATHS)}")
    if path != "auto":
        return path
    n, k = weight.shape
    elem = weight.dtype.itemsize
    host_bytes = weight.host_rows * k * elem
    fixed = fixed_path(rows, host_bytes, k, elem)
    if fixed is not None:  # the link rates (the GPU's profile) are looked up only when needed
        return fixed
    return auto_path(rows, weight.n_hbm * k * elem, host_bytes, *_link_rates(weight.device.index), k, elem)
