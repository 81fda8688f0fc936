"""A split kernel's host window in its own units (pure Python).

Each split kernel that reads pinned host memory keeps a whole number of fixed-size loads in
flight per host-reading CTA: the split GEMV k-steps of 8 KB (:mod:`.split_plan`), the split
attention warp tiles of 8 KB (:mod:`.attention_plan`). Each declares its unit once as a
:class:`KernelWindow`: a caller's ``host_window`` (bytes) must be one of its multiples
(:meth:`KernelWindow.units`), and a window the congestion probe picked (any size,
:mod:`.congestion`) rounds to the nearest one (:meth:`KernelWindow.nearest`).
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class KernelWindow:
    """One kernel's window: ``unit`` bytes of host reads in flight per CTA, 1..``max_units`` of
    them; ``what`` says what a unit is (for the error on a window the kernel cannot honour)."""

    unit: int
    max_units: int
    what: str

    def units(self, window_bytes: int) -> int:
        """A caller's window in units; InvalidArgumentError listing the allowed windows otherwise."""
        return window_units(window_bytes, self.unit, self.max_units, self.what)

    def nearest(self, window_bytes: float) -> int:
        """The kernel window (in units) nearest to a probe's window of any size."""
        return nearest_window_units(window_bytes, self.unit, self.max_units)
