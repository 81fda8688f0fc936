"""How the microbenchmark places warps on an SM (pure Python): how many CTAs of how many warps
put exactly n warps on each SM, and the dynamic shared memory that keeps any further CTA out.

The SM's limits are the tiling part's occupancy table for sm_90 (:data:`smemkit.tiling.occupancy.ARCHS`):
228 KiB of shared memory per SM, 1 KiB reserved per CTA, 227 KiB per CTA at most, 64 warps.
"""

from __future__ import annotations

from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError
from smemkit.tiling.occupancy import ARCHS

_SM90 = ARCHS["sm_90"]

SMEM_PER_SM = _SM90.smem_per_sm  # 228 KiB on sm_90 (SPEC §4)
SMEM_RESERVED_PER_CTA = _SM90.smem_reserved_per_block
SMEM_PER_CTA_MAX = _SM90.smem_per_block_optin  # 227 KiB opt-in
WARPS_PER_CTA_MAX = 32  # kernels.cu ATOM_BLOCK_MAX = 1024 threads
WARPS_PER_SM_MAX = _SM90.max_warps_per_sm


def cta_plan(n_warps: int) -> tuple[int, int]:
    """(CTAs per SM, warps per CTA) that put exactly ``n_warps`` warps on each SM.

    Up to 32 warps: one CTA per SM (its shared memory keeps a second one out). Above: two CTAs of
    n/2 warps, which needs n even and 3 * n/2 > 64, so the SM's 64-warp limit alone keeps a
    third CTA out. Placing CTAs by shared memory needs the largest carveout, which the H200 did
    not grant: CTAs sized for 2-4 per SM ran one after another (benchmarks/results/h200).
    """
    if 1 <= n_warps <= WARPS_PER_CTA_MAX:
        return 1, n_warps
    if n_warps <= WARPS_PER_SM_MAX and n_warps % 2 == 0 and 3 * (n_warps // 2) > WARPS_PER_SM_MAX:
        return 2, n_warps // 2
    raise InvalidArgumentError(
        f"warps per SM must be 1..32 or an even 44..64 (two CTAs that a third cannot join), "
        f"got {n_warps}")


def forcing_smem(ctas_per_sm: int, needed: int) -> int:
    """Dynamic shared memory per CTA so that at most ``ctas_per_sm`` CTAs fit on one SM.

    At least ``needed`` bytes; rounded down to 128-byte units; raises when ``needed`` itself
    does not let that many CTAs fit.
    """
    cap = (SMEM_PER_SM // ctas_per_sm - SMEM_RESERVED_PER_CTA) // 128 * 128
    cap = min(cap, SMEM_PER_CTA_MAX)
    if needed > cap:
        raise InvalidArgumentError(
            f"{ctas_per_sm} CTAs of {needed} B shared memory do not fit one SM ({SMEM_PER_SM} B)"
        )
    # the smallest size that still keeps a further CTA out
    floor = SMEM_PER_SM // (ctas_per_sm + 1) - SMEM_RESERVED_PER_CTA + 128
    size = max(needed, floor)
    size = -(-size // 128) * 128
    return min(size, cap)


@dataclass(frozen=True)
class Layout:
    """Where each warp's addresses start (element stride between warps) and the CTA's smem."""

    warp_stride: int
    smem_bytes: int
    kind: str  # private | bank_shifted | shared
