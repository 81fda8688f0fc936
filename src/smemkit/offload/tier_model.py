"""The time model of a split kernel's two tiers (pure Python): how long ``ctas`` CTAs take to stream
row units from one memory, and the k-split (or context split) that minimises it.

The split GEMV (:mod:`.split_plan`) and the split decode attention (:mod:`.attention_plan`) both
deal a tier's units to its CTAs in balanced waves and pick the split with this model; the rates
below are the H200's (a heuristic the H200 sweep checks; ``split_g`` / ``split_h`` and
``chunks_g`` / ``chunks_h`` override the picks). Rates in bytes per microsecond.
"""

from __future__ import annotations

import math

HBM_BYTES_PER_US = 4.2e6  # ~4.2 TB/s device-copy rate
HOST_BYTES_PER_US = 52e3  # ~52 GB/s SM loads of pinned memory (SPEC, smemkit probe)
HBM_LATENCY_US = 1.5  # loaded HBM latency: a CTA with F bytes in flight streams at most F / latency
HOST_LATENCY_US = 2.5  # probe: 8 CTAs x 16 KB in flight -> 51 GB/s, i.e. 6.4 GB/s per CTA
UNIT_OVERHEAD_US = 0.5  # per unit: the epilogue (the pipeline runs on across units: no drain)
PARTIAL_COST = 0.5  # fp32 partials move through L2 (written, then read once): half an HBM byte each
REDUCE_BYTES_PER_US = 50e3  # the last CTA of a tile reads its partials (float4, 64 KB in flight) at ~50 GB/s


def tier_time_us(blocks: int, split: int, ctas: int, block_bytes: float, bytes_per_us: float,
                 cta_bytes_per_us: float, partial_bytes: float, reduce_bytes: float = 0.0) -> float:
    """Modelled time of one tier: ``blocks`` row units of ``block_bytes`` each, k-split ``split``,
    dealt to at most ``ctas`` CTAs (balanced: every CTA gets ``waves`` or ``waves - 1`` units).

    A CTA streams at min(tier rate / active CTAs, its own cap = min(bytes in flight / latency,
    its share of the SM's mma rate)) and pays UNIT_OVERHEAD_US per unit; a split > 1 adds its fp32
    partials (``partial_bytes`` per split, written and read) at PARTIAL_COST of the HBM rate, and
    the last CTA of a row block then reads ``split x reduce_bytes`` alone (the reduction tail).
    """
    units = blocks * split
    waves = -(-units // ctas)
    active = -(-units // waves)
    rate = min(bytes_per_us / active, cta_bytes_per_us)
    t = waves * (block_bytes / split / rate + UNIT_OVERHEAD_US)
    if split > 1:
        t += PARTIAL_COST * split * partial_bytes / HBM_BYTES_PER_US
        t += split * reduce_bytes / REDUCE_BYTES_PER_US
    return t


def choose_split(blocks: int, ctas: int, max_split: int, block_bytes: float, bytes_per_us: float,
                 cta_bytes_per_us: float, partial_bytes: float, reduce_bytes: float = 0.0) -> int:
    """The k-split (1..max_split) with the least :func:`tier_time_us`; ties go to the smaller split."""
    if blocks <= 0 or ctas <= 0:
        return 1
    best_s, best_t = 1, math.inf
    for s in range(1, max(1, max_split) + 1):
        t = tier_time_us(blocks, s, ctas, block_bytes, bytes_per_us, cta_bytes_per_us, partial_bytes,
                         reduce_bytes)
        if t < best_t * (1 - 1e-9):
            best_s, best_t = s, t
    return best_s


def balanced_ctas(units: int, ctas: int) -> int:
    """Fewest CTAs (of at most ``ctas``) that still finish ``units`` in the same number of waves
    (equal shares)."""
    waves = -(-units // ctas)
    return -(-units // waves)
