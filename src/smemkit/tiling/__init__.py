"""Shared-memory tiling analysis: bank conflicts per warp instruction, padding/swizzle advice, occupancy.

``analyze(pattern)`` predicts the wavefronts of each warp instruction of an access pattern (rule in
:mod:`smemkit.tiling.banks`), ``advise(pattern)`` searches padding and ``Swizzle(B, M, S)`` layouts that
remove the conflicts, and ``occupancy(...)`` is the theoretical occupancy calculator. CPU only; the
predictions are to be validated against Nsight Compute wavefront counters on the device.
"""

from smemkit.tiling.advisor import Advice, Candidate, advise
from smemkit.tiling.banks import WarpAccess, warp_access
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.layout import DTYPE_BYTES, SmemLayout
from smemkit.tiling.occupancy import ARCHS, Occupancy, occupancy
from smemkit.tiling.pattern import Access, AccessReport, Pattern, PatternReport, analyze
from smemkit.tiling.spec_io import load_pattern
from smemkit.tiling.swizzle import Swizzle

__all__ = [
    "ARCHS", "BUILTIN", "DTYPE_BYTES", "Access", "AccessReport", "Advice", "Candidate", "Occupancy",
    "Pattern", "PatternReport", "SmemLayout", "Swizzle", "WarpAccess", "advise", "analyze",
    "load_pattern", "occupancy", "warp_access",
]
