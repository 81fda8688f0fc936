"""The arithmetic of a weight split between HBM and pinned host memory, without torch.

Which rows go to the host for an offload ratio (:func:`host_rows_for_ratio`), whether one slot of
the ring path holds a tile of the weight (:func:`ring_fits`) and which path
``split_linear(path="auto")`` takes (:func:`auto_path`, from a memory-bound model of each path's
time). The kernels and the ring (:mod:`.pinned`, :mod:`.ring_gemm`, :mod:`.gemv`) build on these;
``smemkit offload path`` uses them alone, so it runs without the GPU extra.
"""

from __future__ import annotations

import math

from smemkit.errors import InvalidArgumentError, is_int

TILE_ROWS = 16  # rows of one warp tile of the split kernel (mma M); the HBM/host boundary is a multiple
# Host bytes per chunk (one ring slot). Chunk GEMMs finish only around the end of cuBLAS's
# HBM-rows GEMM (a 16-SM carveout did not change that), then cost 7.5-15 us each at batch 512
# (globaltimer timeline; commit 2e75e66), and a third chunk's copy waits for the first chunk's
# GEMM. So a host part should fill as few chunks as HBM allows: 16 MB slots (32 MB per ring) hold
# the 470 MB layers' host rows at r_hide in one chunk and at r = 0.05 in two, where 8 MB slots took
# two and three (measured in one process: 1.02-1.04x cuBLAS's time at r_hide against 1.05-1.06x
# with 8 MB slots, 1.42-1.44x at r = 0.05 against 1.49-1.54x; commit 81a425b).
RING_SLOT_BYTES = 16 << 20


def host_rows_for_ratio(n_rows: int, ratio: float, tile: int = TILE_ROWS) -> int:
    """How many of ``n_rows`` output rows go to host memory for the offload ratio ``ratio``.

    The host part is the last rows, and the HBM part ``n_rows - host_rows`` must be a whole
    number of ``tile``-row tiles unless one part is empty. Among the allowed counts
    (0, N, and N - m*tile) the one nearest ``ratio * N`` wins; ties go to fewer host rows.
    """
    if not is_int(n_rows) or n_rows < 1:
        raise InvalidArgumentError(f"the weight must have at least one row, got {n_rows!r}")
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not math.isfinite(ratio) \
            or not 0.0 <= ratio <= 1.0:
        raise InvalidArgumentError(f"ratio must be a number in [0, 1], got {ratio!r}")
    if tile < 1:
        raise InvalidArgumentError(f"tile must be >= 1, got {tile}")
    target = ratio * n_rows
    # h = N - m*tile for m in 0..N//tile: the m nearest (N - target)/tile, plus both ends
    m = (n_rows - target) / tile
    candidates = {0, n_rows}
    for mm in (math.floor(m), math.ceil(m)):
        if 0 <= mm <= n_rows // tile:
            candidates.add(n_rows - mm * tile)
    return min(candidates, key=lambda h: (abs(h - target), h))


def ring_fits(k: int, elem_bytes: int) -> bool:
    """Whether one ring slot holds a 16-row tile of the weight (K up to 524,288 at 2 bytes)."""
    return TILE_ROWS * k * elem_bytes <= RING_SLOT_BYTES


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
