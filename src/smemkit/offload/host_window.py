"""A split kernel's host window in its own units (pure Python).

Each split kernel that reads pinned host memory keeps a whole number of fixed-size loads in
flight per host-reading CTA: the split GEMV k-steps of 8 KB (:mod:`.split_plan`), the split
attention warp tiles of 8 KB (:mod:`.attention_plan`). A caller's ``host_window`` (bytes) must be
one of those multiples; a window the congestion probe picked (any size, :mod:`.congestion`)
rounds to the nearest one.
"""

from __future__ import annotations

from smemkit.errors import InvalidArgumentError, is_int


def window_units(window_bytes: int, unit: int, max_units: int, what: str) -> int:
    """A caller's per-CTA window in a split kernel's units (``unit`` bytes, 1..max_units); ``what``
    says what one unit is, for the error."""
    if not is_int(window_bytes) or window_bytes <= 0:
        raise InvalidArgumentError(f"host_window must be a positive number of bytes, got {window_bytes!r}")
    if window_bytes % unit or window_bytes > max_units * unit:
        allowed = ", ".join(str(unit * s) for s in range(1, max_units + 1))
        raise InvalidArgumentError(f"host_window = {window_bytes} bytes: {what}; allowed: {allowed}")
    return window_bytes // unit


def nearest_window_units(window_bytes: float, unit: int, max_units: int) -> int:
    """The kernel window (1..max_units units) nearest to a probe window of any size."""
    return max(1, min(max_units, round(window_bytes / unit)))
