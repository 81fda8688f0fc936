"""The split decode attention's launch plan (pure Python, tested without a GPU): the constants
``split_attention.cu`` is built with, :func:`host_seqs_for_ratio` and :func:`plan_attention`, which
picks each tier's chunk count with the split kernels' time model (:func:`.tier_model.choose_split`).
The kernel, the cache and the op are :mod:`.attention`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from smemkit.errors import InvalidArgumentError, check_positive_int, is_int
from smemkit.offload.host_window import KernelWindow
from smemkit.offload.tier_model import (
    HBM_BYTES_PER_US,
    HBM_LATENCY_US,
    HOST_BYTES_PER_US,
    HOST_LATENCY_US,
    balanced_ctas,
    choose_split,
)

# Mirrors of split_attention.cu's constants (a CPU test checks them against the source).
THREADS = 128
WARPS = 4
HEAD_DIM = 128
TILE_T = 16  # tokens per warp tile
MAX_GROUP = 8  # query heads per KV head the kernel handles (GQA group)
HOST_WARPS_MAX = 4
MIN_CTAS_PER_SM = 3
GROUP_TILES = (1, 2, 4, 8)
WARP_TILE_BYTES = TILE_T * HEAD_DIM * 2 * 2  # K and V of one tile: 8 KB in flight per loading warp
HOST_WINDOW_UNIT = WARP_TILE_BYTES
CHUNK_MULTIPLE = WARPS * TILE_T  # chunk sizes are whole rounds of the 4 warps' tiles
PARTIAL_FLOATS = HEAD_DIM + 2  # o, m, l per (pair, chunk, head)
# Per-CTA streaming caps of the time model: bytes in flight / latency (the tier model's latencies).
HBM_CTA_IN_FLIGHT = WARPS * WARP_TILE_BYTES


def kernel_name(group_tile: int) -> str:
    return f"split_attention_g{group_tile}"


def group_tile(group: int) -> int:
    """The kernel instance for ``group`` query heads per KV head (1, 2, 4 or 8)."""
    if not is_int(group) or not 1 <= group <= MAX_GROUP:
        raise InvalidArgumentError(
            f"query heads per KV head (GQA group) must be an integer in 1..{MAX_GROUP}, got {group!r}")
    for gt in GROUP_TILES:
        if group <= gt:
            return gt
    raise AssertionError("unreachable")


HOST_WINDOW = KernelWindow(HOST_WINDOW_UNIT, HOST_WARPS_MAX,
                           f"the attention kernel's window is a whole number of {HOST_WINDOW_UNIT}-byte "
                           f"warp tiles (K + V of 16 tokens) per CTA")
host_warps_for_window = HOST_WINDOW.units  # loading warps of a host CTA for a caller's window
window_to_host_warps = HOST_WINDOW.nearest  # the nearest kernel window to a probe's window


def host_seqs_for_ratio(batch: int, ratio: float) -> int:
    """Sequences (of ``batch``) whose KV cache goes to host memory: the last ``round(ratio * B)``
    (ties to fewer). The cache is split by whole sequences, so the realised ratio is a multiple
    of 1/B."""
    check_positive_int("batch", batch)
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not math.isfinite(ratio) \
            or not 0.0 <= ratio <= 1.0:
        raise InvalidArgumentError(f"ratio must be a number in [0, 1], got {ratio!r}")
    target = ratio * batch
    lo = math.floor(target)
    return lo if target - lo <= 0.5 else lo + 1


def chunks_for(seq_len: int, n_chunks: int) -> tuple[int, int]:
    """(chunk tokens, chunk count) for about ``n_chunks`` chunks of ``seq_len`` tokens: chunks are
    multiples of CHUNK_MULTIPLE tokens and none is empty."""
    n_chunks = max(1, min(n_chunks, -(-seq_len // CHUNK_MULTIPLE)))
    chunk = -(-seq_len // n_chunks)
    chunk = -(-chunk // CHUNK_MULTIPLE) * CHUNK_MULTIPLE
    return chunk, -(-seq_len // chunk)


@dataclass(frozen=True)
class AttentionPlan:
    """One launch of ``split_attention_g{gt}``: grid, roles, chunking and workspace."""

    gt: int
    grid: int
    host_ctas: int
    hbm_ctas: int
    host_warps: int
    nch_g: int
    chunk_g: int
    nch_h: int
    chunk_h: int
    units_g: int
    units_h: int
    nch_stride: int
    ws_floats: int
    n_counters: int
    slots: int

    def kernel_args(self) -> tuple[int, ...]:
        """host_ctas .. nch_stride, in the kernel's order (after B, H_kv, G, L, b_hbm)."""
        return (self.host_ctas, self.host_warps, self.nch_g, self.chunk_g, self.nch_h, self.chunk_h,
                self.nch_stride)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@lru_cache(maxsize=4096)
def plan_attention(batch: int, h_kv: int, group: int, seq_len: int, b_hbm: int, *, slots: int,
                   host_ctas: int, host_warps: int, chunks_g: int | None = None,
                   chunks_h: int | None = None) -> AttentionPlan:
    """Plan one launch for ``batch`` sequences (``b_hbm`` of them in HBM) x ``h_kv`` KV heads x
    ``seq_len`` cache slots, ``group`` query heads per KV head.

    ``slots`` is how many CTAs the GPU holds at once. A unit is (sequence, KV head, chunk); each
    tier's chunk count minimises the tier model's :func:`~smemkit.offload.tier_model.tier_time_us` (a
    pair's K + V bytes as the block, the tier's CTAs, their in-flight caps), then the tier gets the
    fewest CTAs that keep its waves. ``chunks_g`` / ``chunks_h`` force the counts (then normalised
    so that no chunk is empty).
    """
    for label, value in (("batch", batch), ("h_kv", h_kv), ("seq_len", seq_len), ("slots", slots),
                         ("host_ctas", host_ctas), ("host_warps", host_warps)):
        check_positive_int(label, value)
    if not 0 <= b_hbm <= batch:
        raise InvalidArgumentError(f"b_hbm = {b_hbm} must be in [0, {batch}]")
    if host_warps > HOST_WARPS_MAX:
        raise InvalidArgumentError(f"host_warps = {host_warps} exceeds the kernel's {HOST_WARPS_MAX}")
    gt = group_tile(group)
    pairs_g = b_hbm * h_kv
    pairs_h = (batch - b_hbm) * h_kv
    pair_bytes = 2.0 * seq_len * HEAD_DIM * 2
    partial = 4.0 * PARTIAL_FLOATS * group
    max_chunks = -(-seq_len // CHUNK_MULTIPLE)

    h, nch_h, chunk_h, units_h = 0, 1, seq_len, 0
    if pairs_h:
        h_max = min(host_ctas, slots - 1 if pairs_g else slots)
        if h_max < 1:
            raise InvalidArgumentError(f"no CTA slot is left for the host sequences (slots = {slots})")
        want = chunks_h if chunks_h is not None else choose_split(
            pairs_h, h_max, max_chunks, pair_bytes, HOST_BYTES_PER_US,
            host_warps * WARP_TILE_BYTES / HOST_LATENCY_US, partial * pairs_h)
        chunk_h, nch_h = chunks_for(seq_len, want)
        units_h = pairs_h * nch_h
        h = balanced_ctas(units_h, h_max)
    g, nch_g, chunk_g, units_g = 0, 1, seq_len, 0
    if pairs_g:
        g_max = slots - h
        want = chunks_g if chunks_g is not None else choose_split(
            pairs_g, g_max, max_chunks, pair_bytes, HBM_BYTES_PER_US,
            HBM_CTA_IN_FLIGHT / HBM_LATENCY_US, partial * pairs_g)
        chunk_g, nch_g = chunks_for(seq_len, want)
        units_g = pairs_g * nch_g
        g = balanced_ctas(units_g, g_max)
    split = max(nch_g if pairs_g else 1, nch_h if pairs_h else 1)
    stride = split if split > 1 else 0
    return AttentionPlan(gt=gt, grid=h + g, host_ctas=h, hbm_ctas=g, host_warps=host_warps, nch_g=nch_g,
                         chunk_g=chunk_g, nch_h=nch_h, chunk_h=chunk_h, units_g=units_g, units_h=units_h,
                         nch_stride=stride, ws_floats=batch * h_kv * stride * group * PARTIAL_FLOATS,
                         n_counters=batch * h_kv if stride else 0, slots=slots)


def unit_coverage(plan: AttentionPlan, batch: int, h_kv: int, seq_len: int, b_hbm: int,
                  lengths: list[int] | None = None) -> dict[tuple[int, int], int]:
    """How many times each (pair, 16-token tile start) is loaded under ``plan``, by walking the
    kernel's unit and tile loops in Python (tests require exactly once for every tile below the
    sequence's length, and no tile at or past it)."""
    seen: dict[tuple[int, int], int] = {}

    def walk(pair: int, c: int, chunk: int, active: int) -> None:
        b = pair // h_kv
        length = seq_len if lengths is None else min(max(lengths[b], 0), seq_len)
        t_begin, t_end = c * chunk, min(c * chunk + chunk, length)
        for warp in range(active):
            for t0 in range(t_begin + warp * TILE_T, t_end, active * TILE_T):
                seen[(pair, t0)] = seen.get((pair, t0), 0) + 1

    for cta in range(plan.host_ctas):
        for unit in range(cta, plan.units_h, plan.host_ctas):
            pr, c = divmod(unit, plan.nch_h)
            walk(b_hbm * h_kv + pr, c, plan.chunk_h, plan.host_warps)
    for cta in range(plan.hbm_ctas):
        for unit in range(cta, plan.units_g, plan.hbm_ctas):
            pr, c = divmod(unit, plan.nch_g)
            walk(pr, c, plan.chunk_g, WARPS)
    return seen
