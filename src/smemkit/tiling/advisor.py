"""Find the cheapest padding or swizzle that makes every access to an array conflict-free.

For each array with a conflicting access, the advisor re-analyzes all accesses to that array
(loads and stores alike, since a layout serves both) under candidate layouts:

1. row padding of 1..``max_pad`` elements (default: up to 128 bytes' worth), no transform;
2. ``Swizzle(B, M, S)`` over ``B`` in 1..5, ``M`` in 0..4, ``S`` in ``B``..8, no padding;
3. only if neither works: padding combined with a swizzle (smallest padding first).

A candidate is accepted when every warp instruction reaches its ideal wavefront count. Candidates
that break an access (misaligned vector, vector split by the swizzle, offset outside the
allocation) are skipped. The cost is the bytes added and the occupancy before and after.
"""

from __future__ import annotations

from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError
from smemkit.tiling.banks import warp_access
from smemkit.tiling.layout import SmemLayout
from smemkit.tiling.occupancy import Occupancy, occupancy
from smemkit.tiling.pattern import Pattern, address, analyze_traced, trace
from smemkit.tiling.swizzle import Swizzle

SWIZZLE_GRID = tuple(Swizzle(b, m, s) for b in range(1, 6) for m in range(5) for s in range(b, 9))


@dataclass(frozen=True)
class Candidate:
    """A conflict-free layout for one array and what it costs."""

    layout: SmemLayout
    added_bytes: int
    wavefronts: int
    occupancy_after: Occupancy

    @property
    def summary(self) -> str:
        parts = []
        if self.layout.pad:
            parts.append(f"pad {self.layout.pad} element{'s' if self.layout.pad > 1 else ''}")
        if isinstance(self.layout.transform, Swizzle):
            parts.append(str(self.layout.transform))
        return " + ".join(parts) or "as is"


@dataclass(frozen=True)
class Advice:
    """What to do about one array: its current cost, the smallest padding and swizzles that fix it."""

    array: str
    current: SmemLayout
    wavefronts: int
    ideal: int
    occupancy_before: Occupancy
    padding: Candidate | None
    swizzles: tuple[Candidate, ...]
    combined: Candidate | None = None

    @property
    def conflict_free(self) -> bool:
        return self.wavefronts == self.ideal

    @property
    def best(self) -> Candidate | None:
        """Cheapest fix: fewest bytes added, then padding before swizzle (simpler index math)."""
        options = [c for c in (self.padding, *self.swizzles[:1], self.combined) if c is not None]
        return min(options, key=lambda c: c.added_bytes) if options else None


def _evaluate(layout: SmemLayout, traces) -> int | None:
    """Total wavefronts under ``layout`` if conflict-free, None at the first conflict or invalid access."""
    total = 0
    for access, traced in traces:
        for _warp, _loop, lanes in traced:
            try:
                addrs = [None if i is None else address(layout, access, i) for i in lanes]
            except InvalidArgumentError:
                return None
            result = warp_access(addrs, access.width, access.op)
            if result.wavefronts != result.ideal:
                return None
            total += result.wavefronts
    return total


def advise(pattern: Pattern, arch: str = "sm_90", regs: int | None = None, max_pad: int | None = None,
           swizzles: tuple[Swizzle, ...] = SWIZZLE_GRID, keep: int = 3) -> list[Advice]:
    """One :class:`Advice` per array that some access touches (conflict-free arrays included)."""
    regs = pattern.regs if regs is None else regs
    before = occupancy(arch, pattern.threads, regs, pattern.smem_bytes)
    out = []
    for name, layout in pattern.arrays.items():
        accesses = [a for a in pattern.accesses if a.array == name]
        if not accesses:
            continue
        traces = [(a, trace(pattern, a)) for a in accesses]
        reports = [analyze_traced(layout, a, t) for a, t in traces]
        # Try the worst instructions first: most candidates fail there, which ends their check early.
        traces = [(a, tuple(row for _, row in sorted(zip(r.instructions, t, strict=True),
                                                     key=lambda p: -p[0].result.degree)))
                  for (a, t), r in sorted(zip(traces, reports, strict=True), key=lambda p: -p[1].degree)]
        wavefronts = sum(r.wavefronts for r in reports)
        ideal = sum(r.ideal for r in reports)
        if wavefronts == ideal:
            out.append(Advice(name, layout, wavefronts, ideal, before, None, ()))
            continue
        limit = max_pad if max_pad is not None else max(1, 128 // layout.itemsize)
        base = layout.replace(pad=0, transform=None)

        def candidate(new: SmemLayout, _name=name, _traces=traces, _base=base) -> Candidate | None:
            total = _evaluate(new, _traces)
            if total is None:
                return None
            changed = pattern.replace_array(_name, new)
            try:
                after = occupancy(arch, pattern.threads, regs, changed.smem_bytes)
            except InvalidArgumentError:
                return None  # the padded tile no longer fits in one block's shared memory
            return Candidate(new, new.nbytes - _base.nbytes, total, after)

        padding = next((c for p in range(1, limit + 1)
                        if (c := candidate(base.replace(pad=p))) is not None), None)
        found = []
        for sw in swizzles:
            c = candidate(base.replace(transform=sw))
            if c is not None:
                found.append(c)
                if len(found) >= keep:
                    break
        combined = None
        if padding is None and not found:
            combined = next((c for p in range(1, limit + 1) for sw in swizzles
                             if (c := candidate(base.replace(pad=p, transform=sw))) is not None), None)
        out.append(Advice(name, layout, wavefronts, ideal, before, padding, tuple(found), combined))
    return out
