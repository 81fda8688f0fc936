"""Wavefronts of one warp-wide shared-memory instruction, from the 32 lanes' byte addresses.

The rule implemented (SPEC §4, refined by Nsight Compute on the H200: it predicts the wavefronts of
149 of the 150 microkernels in ``benchmarks/results/h200/tiling.json``):

* Shared memory has 32 banks of 4 bytes: the 4-byte word ``w = address // 4`` lives in bank
  ``w % 32``.
* A warp instruction is split into *phases* of lanes that the hardware serves together:
  32- (and 16-) bit accesses: one phase of all 32 lanes; 64-bit: two half-warps (lanes 0-15,
  16-31); 128-bit: four quarter-warps (lanes 0-7, 8-15, 16-23, 24-31).
* Pair merge (64/128-bit loads): when every aligned lane pair (2k, 2k+1) asks for one address, each
  pair needs one lane's worth of data and the phases hold twice the lanes: 64-bit becomes one
  phase of 32 lanes, 128-bit two half-warps. Measured on the H200: all lanes on one double,
  and lanes 2k/2k+1 on double k, take 1 wavefront, not 2; all lanes on one float4 take 2, not 4;
  but half-warps reading the same 16 doubles (lanes k and k+16 paired) still take 2, and
  quarter-warps reading the same 8 float4 take 4. An inactive partner counts as agreeing.
  Stores do not merge (64-bit pairs storing one double: 2 wavefronts per instruction).
* A lane's access covers ``width / 32`` consecutive words (one word for a 16-bit access).
* A phase costs as many wavefronts as the largest number of *distinct* words requested in any
  one bank. Several lanes reading the same word are served by one wavefront (broadcast /
  multicast); only distinct words in the same bank serialize.
* A phase with no active lane costs nothing; the instruction's wavefronts are the phases' sum.
* The ideal is one wavefront per phase that has an active lane, so 1 (32-bit), 2 (64-bit) and
  4 (128-bit) for a full warp. Conflict degree = actual / ideal.

The pair merge is what the H200 measures: charging every half/quarter-warp mispredicts the
patterns in which lane pairs agree (all lanes on one double, pairs on one double, all lanes on one
float4), and the patterns at the merge's edges (pairs only partly equal, shifted pairs, inactive
partners, 128-bit pairs and quads) all measure as the merge predicts. A 64-bit store of pairs is
not merged, so the merge is for loads only (all in tiling.json).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from smemkit.errors import InvalidArgumentError

BANKS = 32
BANK_BYTES = 4
WARP = 32
WIDTHS = (16, 32, 64, 128)
_PHASE_LANES = {16: 32, 32: 32, 64: 16, 128: 8}


@dataclass(frozen=True)
class Phase:
    """One group of lanes served together: ``banks[b]`` maps each word in bank ``b`` to its lanes."""

    lanes: tuple[int, ...]
    banks: dict[int, dict[int, tuple[int, ...]]] = field(repr=False)

    @property
    def wavefronts(self) -> int:
        return max((len(words) for words in self.banks.values()), default=0)

    @property
    def requests(self) -> int:
        """Lane-word requests (a 128-bit access makes 4)."""
        return sum(len(lanes) for words in self.banks.values() for lanes in words.values())

    @property
    def distinct_words(self) -> int:
        return sum(len(words) for words in self.banks.values())


@dataclass(frozen=True)
class WarpAccess:
    """Wavefront count of one warp instruction, with the per-bank picture kept for display."""

    width: int
    phases: tuple[Phase, ...]
    addresses: tuple[int | None, ...] = field(repr=False)

    @property
    def wavefronts(self) -> int:
        return sum(p.wavefronts for p in self.phases)

    @property
    def ideal(self) -> int:
        return sum(1 for p in self.phases if p.lanes)

    @property
    def degree(self) -> float:
        """actual / ideal; 1.0 is conflict-free (and for an instruction with no active lane)."""
        return self.wavefronts / self.ideal if self.ideal else 1.0

    @property
    def broadcasts(self) -> int:
        """Lane-word requests served by a word another lane of the same phase also asked for."""
        return sum(p.requests - p.distinct_words for p in self.phases)

    @property
    def active_lanes(self) -> int:
        return sum(len(p.lanes) for p in self.phases)


def words_of(address: int, width: int) -> range:
    """The 4-byte words a ``width``-bit access at ``address`` touches."""
    first = address // BANK_BYTES
    return range(first, first + max(1, width // 32))


def _pairs_agree(addrs: Sequence[int | None]) -> bool:
    """Does every aligned lane pair (2k, 2k+1) ask for one address (an inactive lane agrees)?"""
    return all(a is None or b is None or a == b for a, b in zip(addrs[0::2], addrs[1::2], strict=True))


def warp_access(addresses: Sequence[int | None], width: int, op: str = "load") -> WarpAccess:
    """Analyze one ``op`` ('load' or 'store') instruction; ``addresses[lane]`` is the byte address
    or None (lane inactive).

    Addresses must be aligned to the access size, as the hardware requires.
    """
    if width not in WIDTHS:
        raise InvalidArgumentError(f"width={width!r}: access width must be one of {WIDTHS} bits")
    if len(addresses) > WARP:
        raise InvalidArgumentError(f"{len(addresses)} addresses given: a warp has at most {WARP} lanes")
    addrs = tuple(addresses) + (None,) * (WARP - len(addresses))
    size = width // 8
    for lane, a in enumerate(addrs):
        if a is not None and (not isinstance(a, int) or a < 0 or a % size):
            raise InvalidArgumentError(
                f"lane {lane}: address {a!r} must be a non-negative integer aligned to {size} bytes "
                f"for a {width}-bit access"
            )
    per_phase = _PHASE_LANES[width]
    if op not in ("load", "store"):
        raise InvalidArgumentError(f"op={op!r}: allowed 'load' or 'store'")
    if width >= 64 and op == "load" and _pairs_agree(addrs):
        per_phase *= 2
    phases = []
    for start in range(0, WARP, per_phase):
        banks: dict[int, dict[int, list[int]]] = {}
        lanes = []
        for lane in range(start, start + per_phase):
            if addrs[lane] is None:
                continue
            lanes.append(lane)
            for w in words_of(addrs[lane], width):
                banks.setdefault(w % BANKS, {}).setdefault(w, []).append(lane)
        frozen = {b: {w: tuple(ls) for w, ls in sorted(words.items())} for b, words in sorted(banks.items())}
        phases.append(Phase(tuple(lanes), frozen))
    return WarpAccess(width, tuple(phases), addrs)
