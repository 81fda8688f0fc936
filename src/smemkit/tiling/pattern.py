"""Access patterns: which element each thread of a block touches, and their wavefront analysis.

A :class:`Pattern` names a block shape, its shared arrays (:class:`SmemLayout`) and a list of
:class:`Access` statements. An access is one shared load or store in the kernel source, executed
by every warp of the block once per combination of its loop variables; each (warp, loop values)
pair is one warp instruction analyzed with :func:`smemkit.tiling.banks.warp_access`.

The index of an access is evaluated per thread with these variables: ``tx, ty, tz`` (threadIdx),
``tid`` (linear thread id ``tx + ty*Bx + tz*Bx*By``), ``lane = tid % 32``, ``warp = tid // 32``,
plus the access's loop variables. It may be

* a Python callable ``f(env) -> int | tuple`` (``env`` is a dict of those names),
* a string expression (see :mod:`smemkit.tiling.expr`), e.g. ``"ty + 8*i, tx"``,
* a list of strings, one per dimension.

A tuple is a multi-index into the array; a bare integer is a flat index into the unpadded
shape. The index names the *first* element of the access; a vector access (width larger than
the element) covers the following elements of the same row, which must be physically contiguous.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from smemkit.errors import InvalidArgumentError, is_int
from smemkit.tiling import expr
from smemkit.tiling.banks import WARP, WIDTHS, WarpAccess, warp_access
from smemkit.tiling.layout import SmemLayout

IndexSpec = str | Sequence[str] | Callable[[Mapping[str, int]], int | tuple]
THREAD_VARS = ("tx", "ty", "tz", "tid", "lane", "warp")
# Warp instructions of one access the analysis walks lane by lane (in Python); the built-in
# examples need at most 4096.
MAX_INSTRUCTIONS = 32768


@dataclass(frozen=True)
class Access:
    """One shared-memory load or store statement, as every thread of the block executes it."""

    array: str
    index: IndexSpec
    width: int = 32
    op: str = "load"
    loops: Mapping[str, Sequence[int]] = field(default_factory=dict)
    active: str | Callable[[Mapping[str, int]], bool] | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.array, str) or not isinstance(self.label, str):
            raise InvalidArgumentError(f"access: array and label must be strings, got {self.array!r}, "
                                       f"{self.label!r}")
        if self.width not in WIDTHS or not is_int(self.width):
            raise InvalidArgumentError(f"access {self.title}: width={self.width!r}; allowed {WIDTHS} bits")
        if self.op not in ("load", "store"):
            raise InvalidArgumentError(f"access {self.title}: op={self.op!r}; allowed 'load' or 'store'")
        loops = {}
        for name, values in dict(self.loops).items():
            if name in THREAD_VARS or not str(name).isidentifier():
                raise InvalidArgumentError(f"loop variable {name!r}: must be an identifier other than "
                                           f"{', '.join(THREAD_VARS)}")
            values = tuple(values)
            if not values or not all(is_int(v) for v in values):
                raise InvalidArgumentError(f"loop variable {name!r}: give a non-empty list of integers")
            loops[name] = values
        object.__setattr__(self, "loops", loops)
        if isinstance(self.index, str):
            expr.parse(self.index)
        elif not callable(self.index):
            strings = isinstance(self.index, Sequence) and all(isinstance(s, str) for s in self.index)
            if strings and self.index:
                object.__setattr__(self, "index", tuple(self.index))
                for s in self.index:
                    expr.parse(s)
            else:
                raise InvalidArgumentError(f"access {self.title}: index must be a string expression, "
                                           "a list of strings, or a callable taking a dict")
        if isinstance(self.active, str):
            expr.parse(self.active)
        elif self.active is not None and not callable(self.active):
            raise InvalidArgumentError(f"access {self.title}: active must be a string expression, a "
                                       f"callable taking a dict, or None, got {self.active!r}")

    @property
    def title(self) -> str:
        return self.label or f"{self.op} {self.array}"

    def logical_index(self, env: Mapping[str, int]) -> int | tuple:
        if isinstance(self.index, str):
            value = expr.evaluate(self.index, env)
        elif isinstance(self.index, tuple):
            value = tuple(expr.evaluate(s, env) for s in self.index)
        else:
            value = _call(self.index, env, self, "index")
        if isinstance(value, (list, tuple)):
            return tuple(_as_int(v, self) for v in value)
        return _as_int(value, self)

    def is_active(self, env: Mapping[str, int]) -> bool:
        if self.active is None:
            return True
        if isinstance(self.active, str):
            return bool(expr.evaluate(self.active, env))
        return bool(_call(self.active, env, self, "active"))


def _call(function: Callable, env: Mapping[str, int], access: Access, what: str):
    """A user's index or predicate function at ``env``; what it raises names the access."""
    try:
        return function(dict(env))
    except InvalidArgumentError:
        raise
    except Exception as exc:
        raise InvalidArgumentError(f"access {access.title}: the {what} function raised "
                                   f"{type(exc).__name__}: {exc} at {dict(env)}") from None


def _as_int(value, access: Access) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise InvalidArgumentError(f"access {access.title}: index component {value!r} is not an integer")
    return int(value.__index__())


@dataclass(frozen=True)
class Pattern:
    """A block shape, its shared arrays and its accesses; ``regs`` and ``extra_smem`` feed occupancy."""

    name: str
    block: tuple[int, int, int]
    arrays: Mapping[str, SmemLayout]
    accesses: tuple[Access, ...]
    description: str = ""
    regs: int = 32
    extra_smem: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.block, Sequence):
            raise InvalidArgumentError(f"block={self.block!r}: give 1-3 positive sizes, at most 1024 threads")
        block = tuple(self.block) + (1,) * (3 - len(tuple(self.block)))
        if len(block) != 3 or any(not is_int(n) or n <= 0 for n in block) or math.prod(block) > 1024:
            raise InvalidArgumentError(f"block={self.block!r}: give 1-3 positive sizes, at most 1024 threads")
        if not isinstance(self.name, str) or not isinstance(self.description, str):
            raise InvalidArgumentError(f"pattern: name and description must be strings, got {self.name!r}")
        if not is_int(self.regs) or not 0 <= self.regs <= 255:
            raise InvalidArgumentError(f"pattern {self.name!r}: regs={self.regs!r}; allowed: an integer "
                                       "in [0, 255] (registers per thread)")
        if not is_int(self.extra_smem) or not 0 <= self.extra_smem <= 2**31:
            raise InvalidArgumentError(f"pattern {self.name!r}: extra_smem={self.extra_smem!r}; allowed: "
                                       "an integer number of bytes >= 0")
        if not isinstance(self.arrays, Mapping) or not all(
                isinstance(k, str) and isinstance(v, SmemLayout) for k, v in self.arrays.items()):
            raise InvalidArgumentError(f"pattern {self.name!r}: arrays must map names to SmemLayout")
        if not all(isinstance(a, Access) for a in self.accesses):
            raise InvalidArgumentError(f"pattern {self.name!r}: accesses must be Access objects")
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "arrays", dict(self.arrays))
        object.__setattr__(self, "accesses", tuple(self.accesses))
        if not self.accesses:
            raise InvalidArgumentError(f"pattern {self.name!r}: needs at least one access")
        for a in self.accesses:
            if a.array not in self.arrays:
                raise InvalidArgumentError(f"access {a.title}: array {a.array!r} is not declared; "
                                           f"declared: {', '.join(self.arrays) or 'none'}")
            count = math.prod(len(v) for v in a.loops.values()) * self.warps
            if count > MAX_INSTRUCTIONS:
                raise InvalidArgumentError(f"access {a.title}: {count} warp instructions (loop values x "
                                           f"warps); at most {MAX_INSTRUCTIONS} are analyzed")

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def warps(self) -> int:
        return -(-self.threads // WARP)

    @property
    def smem_bytes(self) -> int:
        """Shared memory the arrays take (each rounded to 128 bytes) plus ``extra_smem``."""
        return sum(-(-a.nbytes // 128) * 128 for a in self.arrays.values()) + self.extra_smem

    def replace_array(self, name: str, layout: SmemLayout) -> Pattern:
        return Pattern(self.name, self.block, {**self.arrays, name: layout}, self.accesses,
                       self.description, self.regs, self.extra_smem)

    def thread_env(self, warp: int, lane: int) -> dict[str, int] | None:
        """Thread variables of ``lane`` in ``warp``; None past the end of the block."""
        tid = warp * WARP + lane
        if tid >= self.threads:
            return None
        bx, by, _ = self.block
        return {"tx": tid % bx, "ty": (tid // bx) % by, "tz": tid // (bx * by), "tid": tid,
                "lane": lane, "warp": warp}


@dataclass(frozen=True)
class Instruction:
    """One warp instruction: which warp, which loop values, and its wavefront analysis."""

    warp: int
    loop: Mapping[str, int]
    result: WarpAccess


@dataclass(frozen=True)
class AccessReport:
    access: Access
    layout: SmemLayout
    instructions: tuple[Instruction, ...]

    @property
    def wavefronts(self) -> int:
        return sum(i.result.wavefronts for i in self.instructions)

    @property
    def ideal(self) -> int:
        return sum(i.result.ideal for i in self.instructions)

    @property
    def degree(self) -> float:
        return self.wavefronts / self.ideal if self.ideal else 1.0

    @property
    def broadcasts(self) -> int:
        return sum(i.result.broadcasts for i in self.instructions)

    @property
    def worst(self) -> Instruction:
        """The first instruction with the highest conflict degree (the one to look at)."""
        return max(self.instructions, key=lambda i: (i.result.degree, -i.warp))

    @property
    def conflict_free(self) -> bool:
        return all(i.result.wavefronts == i.result.ideal for i in self.instructions)


@dataclass(frozen=True)
class PatternReport:
    pattern: Pattern
    accesses: tuple[AccessReport, ...]

    @property
    def conflict_free(self) -> bool:
        return all(a.conflict_free for a in self.accesses)

    @property
    def wavefronts(self) -> int:
        return sum(a.wavefronts for a in self.accesses)

    @property
    def ideal(self) -> int:
        return sum(a.ideal for a in self.accesses)


# One traced lane: its logical index, or None when inactive. Tracing is layout-independent, so
# the advisor evaluates the (slow) index expressions once and re-maps addresses per candidate.
Trace = tuple[tuple[int, dict[str, int], tuple[int | tuple | None, ...]], ...]


def trace(pattern: Pattern, access: Access) -> Trace:
    """Logical index of every lane of every warp instruction of ``access``."""
    rows = []
    names = list(access.loops)
    for values in itertools.product(*(access.loops[n] for n in names)):
        loop = dict(zip(names, values, strict=True))
        for warp in range(pattern.warps):
            lanes = []
            for lane in range(WARP):
                env = pattern.thread_env(warp, lane)
                if env is None:
                    lanes.append(None)
                    continue
                env.update(loop)
                lanes.append(access.logical_index(env) if access.is_active(env) else None)
            rows.append((warp, loop, tuple(lanes)))
    return tuple(rows)


def address(layout: SmemLayout, access: Access, index: int | tuple) -> int:
    """Byte address of a lane's access; checks the vector stays in its row and contiguous."""
    bits = layout.itemsize * 8
    if access.width < bits:
        raise InvalidArgumentError(f"access {access.title}: a {access.width}-bit access cannot read "
                                   f"a {layout.dtype} element ({bits} bits)")
    start = layout.offset(index)
    addr = layout.base + layout.physical(start) * layout.itemsize
    count = access.width // bits
    if count > 1:
        col = index[-1] if isinstance(index, tuple) else index % layout.shape[-1]
        if col + count > layout.shape[-1]:
            raise InvalidArgumentError(f"access {access.title}: the {access.width}-bit vector at "
                                       f"{index} runs past the end of its row")
        first = layout.physical(start)
        for j in range(1, count):
            if layout.physical(start + j) != first + j:
                raise InvalidArgumentError(
                    f"access {access.title}: layout {layout.describe()} splits the {access.width}-bit "
                    f"vector at {index} (element {j} is not contiguous)"
                )
    if addr % (access.width // 8):
        raise InvalidArgumentError(
            f"access {access.title}: element {index} is at byte {addr}, not aligned to the "
            f"{access.width // 8}-byte access (layout {layout.describe()})"
        )
    return addr


def analyze_traced(layout: SmemLayout, access: Access, traced: Trace) -> AccessReport:
    instructions = []
    for warp, loop, lanes in traced:
        addrs = [None if idx is None else address(layout, access, idx) for idx in lanes]
        instructions.append(Instruction(warp, loop, warp_access(addrs, access.width, access.op)))
    return AccessReport(access, layout, tuple(instructions))


def analyze_access(pattern: Pattern, access: Access) -> AccessReport:
    return analyze_traced(pattern.arrays[access.array], access, trace(pattern, access))


def analyze(pattern: Pattern) -> PatternReport:
    """Wavefronts of every warp instruction of every access of ``pattern``."""
    return PatternReport(pattern, tuple(analyze_access(pattern, a) for a in pattern.accesses))
