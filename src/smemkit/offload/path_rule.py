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
from smemkit.offload.ring_gemm import ring_fits

LINEAR_PATHS = ("auto", "kernel", "ring", "direct")
# The auto rule's constants, from H200 timings of both paths at every point (commit 287bceb;
# docs/offload.md): past KERNEL_MAX_ROWS input rows the ring path was the faster at all 28 points
# of batch 64; at batch 1-8 the split kernel streamed its HBM rows KERNEL_HBM_SLOWDOWN x slower than
# cuBLAS (r = 0: 1.15-1.47x; 1.4 rather than the median 1.3 because its HBM rows slow further while
# host CTAs run: at 1.3 the rule chose the kernel at 8192 x 28672, r*, where it was 1.33x slower,
# in two timings) and its host rows at KERNEL_HOST_FACTOR x the copy-engine time (r = 1:
# 1.08-1.09x). RING_COPY_OVERHEAD_S is the ring's fixed cost per call beyond its copy, added once
# (where the rule weighs the two paths, <= 8 rows, a small host part is one copy): the side-stream
# ring pays 15-25 us at r = 0.05 (one 5.9 MB copy); over batch 1-8 of two timings of it, 15 us picks
# the faster path at 51 and 49 of 56 points against 47 and 45 with 25 us, and at 4 more points each
# the pick is <= 1.12x the ideal (commits 5419159, c6e8bdf).
KERNEL_MAX_ROWS = 8
KERNEL_HBM_SLOWDOWN = 1.4
KERNEL_HOST_FACTOR = 1.09
RING_COPY_OVERHEAD_S = 15e-6


def path_times(hbm_bytes: int, host_bytes: int, hbm_bytes_per_s: float,
               host_bytes_per_s: float) -> dict[str, float]:
    """Seconds the rule's model gives each path for a memory-bound split (no compute term):
    the ideal max(h, g), the kernel max(1.09 h, 1.4 g) and the ring max(h + 15 us, g), where h and
    g are the host and HBM bytes at B_h and B_g (constants above)."""
    t_host, t_hbm = host_bytes / host_bytes_per_s, hbm_bytes / hbm_bytes_per_s
    return {"ideal": max(t_host, t_hbm),
            "kernel": max(KERNEL_HOST_FACTOR * t_host, KERNEL_HBM_SLOWDOWN * t_hbm),
            "ring": max(t_host + RING_COPY_OVERHEAD_S, t_hbm)}


def fixed_path(rows: int, host_bytes: int, k: int | None = None, elem_bytes: int = 2) -> str | None:
    """The path the shape alone decides, or None when the model must weigh kernel and ring:
    "cublas" without host bytes, the kernel when a ring slot cannot hold 16 weight rows of width
    ``k`` (when given), the ring past KERNEL_MAX_ROWS rows (measured faster there)."""
    if host_bytes == 0:
        return "cublas"
    if k is not None and not ring_fits(k, elem_bytes):
        return "kernel"
    return "ring" if rows > KERNEL_MAX_ROWS else None


def faster_path(times: dict[str, float]) -> str:
    """The faster of the kernel and the ring by :func:`path_times` (the kernel on a tie)."""
    return "kernel" if times["kernel"] <= times["ring"] else "ring"


def auto_path(rows: int, hbm_bytes: int, host_bytes: int, hbm_bytes_per_s: float,
              host_bytes_per_s: float, k: int | None = None, elem_bytes: int = 2) -> str:
    """The path ``split_linear(path="auto")`` takes: :func:`fixed_path`, else
    :func:`faster_path` by the model."""
    fixed = fixed_path(rows, host_bytes, k, elem_bytes)
    return fixed or faster_path(path_times(hbm_bytes, host_bytes, hbm_bytes_per_s, host_bytes_per_s))


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
