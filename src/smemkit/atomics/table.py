"""The service-time table S(n, e, c, op, dtype) of the shared-memory atomic unit.

One :class:`ServiceCurve` per (variant, address pattern, scope): S(n) in SM cycles per warp
instruction when n warps per SM issue that atomic back to back (the unit saturated at that
concurrency), for n on a grid (1..64). ``e`` is the address pattern (and its wavefronts per
instruction), ``c`` the CAS share: CAS is its own op (and ``mix`` interleaves it with add);
mixtures are predicted by adding utilizations (model.py), not tabulated.

The table is data (JSON). ``benchmarks/atomics.py`` measures it on the GPU and writes it into
``benchmarks/results/h200/atomics.json`` (key ``service_table``); ``smemkit atomics analyze
--table`` reads either that results file or a bare table file. The package carries the H200's
measured table (``atomics/data/h200_service_table.json``, copied from that results file);
:func:`placeholder_table` (made-up numbers with the right shape, ``source = "placeholder"``,
printed as NOT MEASURED) remains for the dry run and when the packaged file is missing.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from smemkit.atomics.kernels import DTYPE_BYTES, PATTERNS, SUPPORTED, Variant, nominal_wavefronts
from smemkit.errors import InvalidArgumentError, check_int_range, check_number_range
from smemkit.inputs import existing_file, read_text

# 6 is on the grid because add (int32, distinct banks) runs slower at 6 warps than at 4 on the H200
# (0.712 vs 0.792 warp instructions per cycle, benchmarks/results/h200/atomics.json): a dip no
# interpolation between 4 and 8 produces. 5 and 7 stay off the grid and test whether it is dense
# enough (the validation's ``n_off_grid`` records).
N_GRID = (1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64)
SCOPES = ("private", "shared")
PACKAGED = "atomics/data/h200_service_table.json"  # the service_table of the H200 atomics.json


@dataclass(frozen=True)
class ServiceCurve:
    """S(n) for one variant, address pattern and scope."""

    variant: str
    pattern: str
    scope: str
    wavefronts: float  # data-pipe passes per warp instruction (nominal unless measured)
    n: tuple[int, ...]
    cycles: tuple[float, ...]  # S(n), SM cycles per warp instruction
    sass: str | None = None  # native | cas_loop | mixed | None (not checked)

    def __post_init__(self) -> None:
        for label in ("variant", "pattern"):
            if not isinstance(getattr(self, label), str) or not getattr(self, label):
                raise InvalidArgumentError(f"curve {self.key}: {label} must be a non-empty string")
        if self.scope not in SCOPES:
            raise InvalidArgumentError(f"curve {self.key}: scope {self.scope!r}; allowed: "
                                       f"{', '.join(SCOPES)}")
        if self.sass is not None and not isinstance(self.sass, str):
            raise InvalidArgumentError(f"curve {self.key}: sass must be a string or null, got {self.sass!r}")
        check_number_range(f"curve {self.key}: wavefronts", self.wavefronts, 1e-3, 1024)
        if len(self.n) != len(self.cycles) or not self.n:
            raise InvalidArgumentError(f"curve {self.key}: n and cycles must be equal, non-empty lists")
        for n in self.n:
            check_int_range(f"curve {self.key}: n (warps per SM)", n, 1, 1024)
        if list(self.n) != sorted(set(self.n)):
            raise InvalidArgumentError(f"curve {self.key}: n must increase strictly, got {self.n}")
        for c in self.cycles:
            check_number_range(f"curve {self.key}: service time (positive cycles)", c, 1e-6, 1e9)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.variant, self.pattern, self.scope)

    def at(self, n: float) -> float:
        """S(n) between grid points with the throughput 1/S linear in n (below saturation each
        added warp adds its own rate, so X, not S, is near linear: on the H200 this predicts
        n = 3 within 1-3 % where linear S was 10 % off); held constant beyond the ends."""
        if n <= self.n[0]:
            return self.cycles[0]
        if n >= self.n[-1]:
            return self.cycles[-1]
        i = bisect.bisect_right(self.n, n)
        n0, n1 = self.n[i - 1], self.n[i]
        x0, x1 = 1.0 / self.cycles[i - 1], 1.0 / self.cycles[i]
        return 1.0 / (x0 + (x1 - x0) * (n - n0) / (n1 - n0))

    def to_dict(self) -> dict:
        return {"variant": self.variant, "pattern": self.pattern, "scope": self.scope,
                "wavefronts": self.wavefronts, "n": list(self.n), "cycles": list(self.cycles),
                "sass": self.sass}

    @classmethod
    def from_dict(cls, d: dict) -> ServiceCurve:
        if not isinstance(d, dict):
            raise InvalidArgumentError(f"a curve must be a JSON object, got {type(d).__name__}")
        missing = [k for k in ("variant", "pattern", "wavefronts", "n", "cycles") if k not in d]
        if missing:
            raise InvalidArgumentError(f"curve {d.get('variant')}/{d.get('pattern')} lacks "
                                       f"{', '.join(missing)}")
        if not isinstance(d["n"], list) or not isinstance(d["cycles"], list):
            raise InvalidArgumentError(f"curve {d['variant']}/{d['pattern']}: n and cycles must be lists")
        return cls(d["variant"], d["pattern"], d.get("scope", "private"), d["wavefronts"],
                   tuple(d["n"]), tuple(d["cycles"]), d.get("sass"))


@dataclass
class ServiceTable:
    """All curves measured on one GPU, and where they came from."""

    gpu: str
    source: str  # measured | placeholder
    curves: dict[tuple[str, str, str], ServiceCurve] = field(default_factory=dict)
    sm_count: int = 132
    sm_clock_mhz: float | None = None
    notes: str = ""

    @property
    def measured(self) -> bool:
        return self.source == "measured"

    def add(self, curve: ServiceCurve) -> None:
        self.curves[curve.key] = curve

    def curve(self, variant: str, pattern: str, scope: str = "private") -> ServiceCurve:
        key = (variant, pattern, scope)
        if key not in self.curves:
            have = sorted({f"{v}/{p}/{s}" for v, p, s in self.curves if v == variant})
            raise InvalidArgumentError(
                f"the service table ({self.gpu}, {self.source}) has no curve for {variant} with pattern "
                f"{pattern} ({scope}); for {variant} it has: {', '.join(have) or 'nothing'}"
            )
        return self.curves[key]

    def service(self, variant: str, pattern: str, n: float, scope: str = "private") -> float:
        return self.curve(variant, pattern, scope).at(n)

    def per_wavefront(self, variant: str, n: float, scope: str = "private") -> float:
        """Cycles per data-pipe wavefront: S(distinct_banks, n) / its wavefronts per instruction.

        The analysis scales this by the measured wavefronts per instruction (the wavefront-linear
        assumption, validated on the held-out conflict patterns by the benchmark).
        """
        c = self.curve(variant, "distinct_banks", scope)
        return c.at(n) / c.wavefronts

    def service_estimate(self, variant: str, pattern: str, n: float, scope: str = "private") -> float:
        """S for any pattern: the measured curve when the table has it, else interpolation within
        its family (the e dimension), see :meth:`family_service`."""
        if (variant, pattern, scope) in self.curves:
            return self.service(variant, pattern, n, scope)
        p = PATTERNS.get(pattern)
        if p is None or p.kind not in ("mix", "conflict"):
            return self.service(variant, pattern, n, scope)  # raises with what exists
        return self.family_service(variant, p.kind, p.k, n, scope)

    def family_service(self, variant: str, family: str, k: float, n: float, scope: str = "private") -> float:
        """S along a pattern family at a (possibly fractional) K, from the family's measured members,
        interpolated as a power law (log S linear in log K):

        * ``mix`` (K addresses, each shared by 32/K lanes, no bank conflict): same (K=1) .. mixK ..
          distinct_banks (K=32);
        * ``conflict`` (32 addresses, K per bank): distinct_banks (K=1) .. conflictK .. one_bank
          (K=32).
        Why a power law: on the H200 a native shared atomic serves one lane per bank per pass and
        does not merge lanes on one address (add: same 32, mix4 8, distinct 1 cycles per warp
        instruction; conflict4 4, one_bank 32), so S ~ lanes per bank = 32/K (mix) or K
        (conflict), a straight line in log-log; CAS-loop emulations bend it only mildly. The first
        rule (linear in log2 K for mix, in K for conflict) missed mix16/mix8 by 30-40 %.
        Outside the measured members the nearest two extrapolate.
        """
        if family == "mix":
            members = [("same", 1)] + [(q.name, q.k) for q in PATTERNS.values() if q.kind == "mix"] + \
                      [("distinct_banks", 32)]
        elif family == "conflict":
            members = [("distinct_banks", 1)] + [(q.name, q.k) for q in PATTERNS.values()
                                                 if q.kind == "conflict"] + [("one_bank", 32)]
        else:
            raise InvalidArgumentError(f"pattern family must be 'mix' or 'conflict', got {family!r}")
        anchors = sorted((math.log2(max(kk, 1.0)), math.log2(self.service(variant, name, n, scope)))
                         for name, kk in members if (variant, name, scope) in self.curves)
        if len(anchors) < 2:
            raise InvalidArgumentError(f"the table has fewer than two {family} patterns for {variant} "
                                       f"({scope}) to interpolate K={k:g} from")
        xs = [a for a, _ in anchors]
        x = math.log2(max(k, 1.0))
        i = min(max(bisect.bisect_right(xs, x), 1), len(xs) - 1)
        (x0, s0), (x1, s1) = anchors[i - 1], anchors[i]
        return 2.0 ** (s0 + (s1 - s0) * (x - x0) / (x1 - x0))

    def variants(self) -> list[str]:
        return sorted({v for v, _, _ in self.curves})

    def to_dict(self) -> dict:
        return {"gpu": self.gpu, "source": self.source, "sm_count": self.sm_count,
                "sm_clock_mhz": self.sm_clock_mhz, "notes": self.notes,
                "curves": [c.to_dict() for c in self.curves.values()]}

    @classmethod
    def from_dict(cls, d: dict) -> ServiceTable:
        """A table from its JSON form, every field checked (InvalidArgumentError names it)."""
        if not isinstance(d, dict):
            raise InvalidArgumentError(f"a service table is a JSON object, got {type(d).__name__}")
        missing = [k for k in ("gpu", "source", "curves") if k not in d]
        if missing:
            raise InvalidArgumentError(f"not a valid atomics service table: lacks {', '.join(missing)} "
                                       "(it has gpu, source, sm_count, sm_clock_mhz, notes, curves)")
        for label in ("gpu", "source", "notes"):
            if not isinstance(d.get(label, ""), str):
                raise InvalidArgumentError(f"service table: {label} must be a string, got {d[label]!r}")
        sm_count = check_int_range("service table: sm_count", d.get("sm_count", 132), 1, 100_000)
        clock = d.get("sm_clock_mhz")
        if clock is not None:
            clock = check_number_range("service table: sm_clock_mhz", clock, 1.0, 1e5)
        if not isinstance(d["curves"], list) or not d["curves"]:
            raise InvalidArgumentError("service table: curves must be a non-empty list of curve objects")
        table = cls(d["gpu"], d["source"], sm_count=sm_count, sm_clock_mhz=clock, notes=d.get("notes", ""))
        for c in d["curves"]:
            table.add(ServiceCurve.from_dict(c))
        return table

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")


def load_table(path: str | Path | None = None) -> ServiceTable:
    """A table from ``path`` (a table, or a results file with a ``service_table`` key); without
    a path the packaged H200 table when it exists, else the placeholder."""
    if path is None:
        packaged = resources.files("smemkit").joinpath(PACKAGED)
        if not packaged.is_file():
            return placeholder_table()
        data = json.loads(packaged.read_text())
    else:
        p = Path(path)
        if existing_file(p) is None:
            raise InvalidArgumentError(f"service table {p} does not exist")
        try:
            data = json.loads(read_text(p, "service table"))
        except ValueError as exc:
            if isinstance(exc, InvalidArgumentError):
                raise
            raise InvalidArgumentError(f"{p} is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"{path}: a service table is a JSON object, got {type(data).__name__}")
    if "service_table" in data:
        data = data["service_table"]
    try:
        return ServiceTable.from_dict(data)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{path or PACKAGED}: {exc}") from None


# ---- the placeholder ---------------------------------------------------------------------------

# Made-up shape, NOT measurements: S(n) = w_eff * s_wf * (1 + 4/n) cycles per warp instruction,
# s_wf = 2 cycles per wavefront for native 32-bit ops; CAS retry loops cost 3x and degrade with
# the number of lanes that collide on one address; a same-address instruction is taken to be
# serialized (32 passes) except for the merging POPC.INC path. Used by --dry-run and the tests.
_PLACEHOLDER_S_WF = 2.0
_PLACEHOLDER_CAS_FACTOR = 3.0
_CAS_LOOP = {("add", "float32"), ("add", "float64"), ("add", "int64"), ("add", "uint64"),
             ("inc", "int64"), ("inc", "uint64"), ("max", "int64"), ("max", "uint64"),
             ("and", "int64"), ("and", "uint64"), ("or", "int64"), ("or", "uint64"),
             ("cas_add", "int32"), ("cas_add", "float32"), ("cas_add", "float64")}


def _placeholder_weff(op: str, dtype: str, returning: bool, pattern: str) -> float:
    p = PATTERNS[pattern]
    w = float(nominal_wavefronts(p, dtype))
    lanes_per_addr = 32 / p.distinct_addresses()
    if op == "inc" and not returning and DTYPE_BYTES[dtype] == 4:
        return w  # POPC.INC merges a warp's same-address increments
    return max(w, lanes_per_addr * DTYPE_BYTES[dtype] / 4)


def placeholder_table(gpu: str = "NVIDIA H200 (placeholder)") -> ServiceTable:
    table = ServiceTable(gpu, "placeholder", notes="made-up numbers with the right shape; not measured")
    for op, dtypes in SUPPORTED.items():
        for dtype in dtypes:
            for returning in (False, True):
                v = Variant(op, dtype, returning)
                loop = (op, dtype) in _CAS_LOOP
                for pattern in PATTERNS:
                    w_eff = _placeholder_weff(op, dtype, returning, pattern)
                    factor = _PLACEHOLDER_CAS_FACTOR if loop else 1.0
                    if op == "mix":
                        factor = 1.5
                    w_nom = float(nominal_wavefronts(PATTERNS[pattern], dtype))
                    for scope in SCOPES:
                        share = 1.0 if scope == "private" else 1.25
                        cycles = tuple(w_eff * _PLACEHOLDER_S_WF * factor * share * (1 + 4 / n)
                                       for n in N_GRID)
                        table.add(ServiceCurve(v.name, pattern, scope, w_nom, N_GRID, cycles,
                                               "cas_loop" if loop else "native"))
    return table
