"""Per-warp clock readings of a microbenchmark launch turned into per-SM throughput (numpy, no GPU).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smemkit.errors import InvalidArgumentError


@dataclass(frozen=True)
class SmThroughput:
    """One SM's share of a microbenchmark launch."""

    sm: int
    warps: int
    cycles: int
    instructions: int
    start_spread: float = 0.0  # (last start - first start) / span of the SM's warps

    @property
    def per_cycle(self) -> float:
        return self.instructions / self.cycles if self.cycles > 0 else float("nan")


def per_sm_throughput(timing: np.ndarray, smids: np.ndarray, warps_per_cta: int,
                      iters: int) -> list[SmThroughput]:
    """Per-SM warp instructions per cycle from the kernel's outputs.

    ``timing`` holds (start, end) clock64 per warp in global warp order, ``smids`` the SM of each
    CTA. clock64 is a per-SM counter, so start and end are compared only within one SM:
    cycles = last end - first start over the SM's warps.
    """
    timing = np.asarray(timing, dtype=np.int64).reshape(-1, 2)
    smids = np.asarray(smids, dtype=np.int64)
    if timing.shape[0] != smids.shape[0] * warps_per_cta:
        raise InvalidArgumentError(
            f"{timing.shape[0]} warp timings for {smids.shape[0]} CTAs of {warps_per_cta} warps"
        )
    cta_of_warp = np.repeat(np.arange(smids.shape[0]), warps_per_cta)
    sm_of_warp = smids[cta_of_warp]
    out = []
    for sm in np.unique(smids):
        mine = timing[sm_of_warp == sm]
        cycles = int(mine[:, 1].max() - mine[:, 0].min())
        out.append(SmThroughput(int(sm), int(mine.shape[0]), cycles, int(mine.shape[0]) * iters,
                                start_spread(mine)))
    return out


def start_spread(intervals: np.ndarray) -> float:
    """(last start - first start) / (last end - first start) of one SM's warps.

    The kernel's start gate releases an SM's warps together once all its CTAs are resident, so
    this is ~0; a large spread means the gate gave up and the CTAs did not share the SM. The
    ends may differ a lot: with the atomic unit saturated, the scheduler favours the older
    CTA's warps and the younger ones finish later (seen on the H200 with two CTAs per SM), which
    is part of what n resident warps get, so it is not a reason to drop the SM.
    """
    span = int(intervals[:, 1].max() - intervals[:, 0].min())
    spread = int(intervals[:, 0].max() - intervals[:, 0].min())
    return spread / span if span > 0 else 1.0


def summarize_sms(rows: list[SmThroughput], n_warps: int, max_spread: float = 0.05) -> dict:
    """Median throughput over the SMs that ran exactly ``n_warps`` warps, started within
    ``max_spread`` of the SM's span, and how many did (an SM that got a different count, or
    whose CTAs did not start together, is left out)."""
    good = [r.per_cycle for r in rows
            if r.warps == n_warps and r.cycles > 0 and r.start_spread <= max_spread]
    if not good:
        raise InvalidArgumentError(
            f"no SM ran exactly {n_warps} warps started together (got warps "
            f"{sorted({r.warps for r in rows})}, start spread "
            f"{min(r.start_spread for r in rows):.2f}..{max(r.start_spread for r in rows):.2f} "
            f"of the span, allowed {max_spread})")
    return {
        "per_cycle_median": float(np.median(good)),
        "per_cycle_min": float(np.min(good)),
        "per_cycle_max": float(np.max(good)),
        "sms": len(good),
        "sms_other": len(rows) - len(good),
    }
