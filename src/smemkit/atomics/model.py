"""The shared-atomic unit as a single-server, load-dependent queue (SPEC §3; Dong & Pai, seed 004).

Formulation (ours; the seed gives only the abstract):

* **Utilization law.** On SM i, U_i = sum_k X_k,i * S_k, with X_k,i the rate of class-k shared
  atomic warp instructions on that SM (per active cycle, from counters) and S_k the service time
  of one such instruction (cycles the unit is busy with it) from the microbenchmark table at the
  SM's concurrency n and address pattern e. Classes add because the unit serves one instruction
  at a time: the CAS share c enters as X_cas * S_cas.

* **Load-dependent closed queue** (a machine-repairman model): the n warps of an SM are the
  customers; each spends a think time Z (cycles of other work) between atomics and then visits
  the unit, whose service rate with j warps present is mu(j) = 1 / S(j) (S(j) measured with j
  warps issuing back to back, so pipelining and parallelism inside the unit are in mu(j)). The
  network (one delay station, one load-dependent station) has the product-form solution

      P(j) = C * Z^(n-j) / (n-j)! * prod_{i=1..j} S(i),     j = 0..n

  (j warps at the unit), so throughput X = sum_j P(j) mu(j), mean warps at the unit
  Q = sum_j j P(j), response time R = Q / X (queueing + service, Little's law) and busy
  probability 1 - P(0). As Z -> 0, X -> mu(n) (saturation); as Z -> inf, X -> n / (Z + S(1)).
  Offered load is n / (Z + S(1)): the rate the warps would issue if the unit never queued.
  Evaluated in log space, which is exact and stable (the recursive MVA form loses P(0) to
  rounding near saturation).

* **Open approximation** for a quick latency read at a measured utilization rho: M/D/1,
  R = S * (1 + rho / (2 (1 - rho))).

* **Verdict.** The unit is the bottleneck when the typical (median) SM's U reaches the
  saturation threshold (0.6 by default, the usual "60 % of peak" cut for memory- or
  compute-bound in NVIDIA's guidance) and no other unit of the same profile (issue slots, LSU
  pipe, shared-memory data pipe, L2, DRAM) is busier by more than a small margin.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError


def utilization(rate: float, service: float) -> float:
    """U = X * S (rate in instructions per cycle, service in cycles per instruction)."""
    if rate < 0 or service < 0:
        raise InvalidArgumentError(f"rate and service time must be >= 0, got {rate}, {service}")
    return rate * service


def mixed_utilization(rates: Mapping[str, float], services: Mapping[str, float]) -> float:
    """U = sum_k X_k S_k over instruction classes (e.g. alu and cas)."""
    missing = set(rates) - set(services)
    if missing:
        raise InvalidArgumentError(f"no service time for classes {sorted(missing)}")
    return sum(utilization(rates[k], services[k]) for k in rates)


@dataclass(frozen=True)
class QueuePoint:
    """The closed model at one think time."""

    n: int
    think: float  # Z, cycles of other work between a warp's atomics
    offered: float  # n / (Z + S(1)), instructions per cycle without queueing
    throughput: float  # X, warp instructions per cycle through the unit
    response: float  # R, cycles from arrival at the unit to completion
    utilization: float  # 1 - P(unit idle)
    queue: float  # mean warps at the unit

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in
                ("n", "think", "offered", "throughput", "response", "utilization", "queue")}


def closed_queue(service: Callable[[int], float], n: int, think: float) -> QueuePoint:
    """Exact solution of the load-dependent machine-repairman model (see module docstring).

    ``service(j)`` is S(j), the cycles per instruction when j warps are at the unit.
    """
    if n < 1:
        raise InvalidArgumentError(f"the closed model needs n >= 1 warps, got {n}")
    if think < 0:
        raise InvalidArgumentError(f"think time must be >= 0, got {think}")
    s = [float(service(j)) for j in range(1, n + 1)]
    if min(s) <= 0:
        raise InvalidArgumentError("service times must be positive")
    log_prod = [0.0]
    for sj in s:
        log_prod.append(log_prod[-1] + math.log(sj))
    logs: list[float] = []
    for j in range(n + 1):
        if think == 0:
            logs.append(log_prod[j] if j == n else -math.inf)
        else:
            logs.append((n - j) * math.log(think) - math.lgamma(n - j + 1) + log_prod[j])
    top = max(logs)
    weights = [math.exp(x - top) if x > -math.inf else 0.0 for x in logs]
    norm = sum(weights)
    p = [w / norm for w in weights]
    throughput = sum(p[j] / s[j - 1] for j in range(1, n + 1))
    queue = sum(j * p[j] for j in range(n + 1))
    return QueuePoint(n, float(think), n / (think + s[0]), throughput, queue / throughput, 1.0 - p[0], queue)


def serial_throughput(service: float, think_per_sm: float) -> float:
    """Warp instructions per SM cycle when each loop iteration costs the SM its think work
    (``think_per_sm`` = Z / n: cycles per iteration of the think-only loop, issue contention
    included) plus the atomic's service S, one after the other.

    Measured on the H200 (benchmarks/results/h200/atomics.json, the ``think`` validation records,
    which keep both predictions): the closed queue, which lets think work and service overlap,
    overestimated think-time throughput by up to 32 % at 64 warps; this serial rule came within 6 %
    there (within 22.5 % everywhere, worst at 8 warps of returning CAS, where the atomic's latency
    rather than its service matters).
    """
    if service <= 0 or think_per_sm < 0:
        raise InvalidArgumentError("service must be > 0 and think time >= 0")
    return 1.0 / (think_per_sm + service)


def load_curve(service: Callable[[int], float], n: int, thinks: Iterable[float]) -> list[QueuePoint]:
    """Throughput and response time as the offered load grows (think time shrinks)."""
    return sorted((closed_queue(service, n, z) for z in thinks), key=lambda q: q.offered)


def md1_response(rho: float, service: float) -> float:
    """Open M/D/1 response time S (1 + rho / (2 (1 - rho))); infinite at rho >= 1."""
    if rho < 0:
        raise InvalidArgumentError(f"utilization must be >= 0, got {rho}")
    if rho >= 1:
        return math.inf
    return service * (1 + rho / (2 * (1 - rho)))


# ---- per-SM summary and verdict ---------------------------------------------------------------


@dataclass(frozen=True)
class PerSM:
    """U over the SMs of one kernel: exact per-instance values or bounds from rollups."""

    min: float
    median: float
    max: float
    source: str  # instances | rollups
    sms: int  # SMs that contributed (active ones)

    @classmethod
    def of(cls, values: Iterable[float]) -> PerSM:
        vals = [float(v) for v in values if not math.isnan(v)]
        if not vals:
            raise InvalidArgumentError("no per-SM values")
        return cls(min(vals), statistics.median(vals), max(vals), "instances", len(vals))

    def to_dict(self) -> dict:
        return {"min": self.min, "median": self.median, "max": self.max, "source": self.source,
                "sms": self.sms}


UNIT_LABELS = {
    "atomic": "shared-atomic unit",
    "issue": "issue slots",
    "lsu": "LSU pipe",
    "shared": "shared-memory data pipe",
    "l2": "L2",
    "dram": "DRAM",
}
THRESHOLD = 0.6  # another unit at >= 60 % of its peak (ncu's pct of peak: DRAM tops out near 0.8-0.9)
# The atomic unit is the bottleneck when >= 80 % busy (a single-server queue's wait grows as
# U / (1 - U): 4 service times at 0.8). The validation calls the same records atomic-bound; below
# it, with no other unit saturated, the H200 kernels were latency-bound (hist_inc on one bin from
# L2: U 0.69, and loading ahead, not fewer wavefronts, made it faster).
ATOMIC_BOUND_U = 0.8
# Issue slots likewise: a scheduler issues one instruction per cycle, and the same kernel (issue
# 0.62) was not issue-bound.
UNIT_THRESHOLDS = {"issue": 0.8}
MARGIN = 0.05


@dataclass(frozen=True)
class Verdict:
    atomic_bound: bool
    bottleneck: str  # a key of UNIT_LABELS, or "none"
    summary: str
    evidence: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"atomic_bound": self.atomic_bound, "bottleneck": self.bottleneck,
                "summary": self.summary, "evidence": list(self.evidence)}


SAME_PATH_UNITS = ("shared", "lsu")


def verdict(u_atom: PerSM, others: Mapping[str, float | None], *, threshold: float = THRESHOLD,
            atomic_threshold: float = ATOMIC_BOUND_U, margin: float = MARGIN) -> Verdict:
    """Is the shared-atomic unit the bottleneck? ``others`` are utilizations (0..1) of other units.

    The shared-memory data pipe and LSU counters include the atomics' own traffic, so they are
    shown as evidence but do not compete: an atomic-bound kernel saturates them too.
    """
    known = {k: v for k, v in others.items()
             if v is not None and not math.isnan(v) and k not in SAME_PATH_UNITS}
    u = u_atom.median
    ranked = sorted(known.items(), key=lambda kv: -kv[1])
    top, u_top = ranked[0] if ranked else ("none", 0.0)
    evidence = [f"{UNIT_LABELS['atomic']}: U per SM min {u_atom.min:.2f} / median {u:.2f} / "
                f"max {u_atom.max:.2f} ({u_atom.source}, {u_atom.sms} SMs)"]
    evidence += [f"{UNIT_LABELS.get(k, k)}: {v:.2f}" for k, v in ranked]
    evidence += [f"{UNIT_LABELS.get(k, k)}: {v:.2f} (includes the atomics' own traffic)"
                 for k, v in others.items() if k in SAME_PATH_UNITS and v is not None]
    if u >= atomic_threshold and u >= u_top - margin:
        return Verdict(True, "atomic", f"the shared-atomic unit is the bottleneck (median U {u:.2f})",
                       tuple(evidence))
    if u_atom.max >= atomic_threshold > u:
        evidence.append(f"load imbalance: the busiest SM's atomic unit reaches {u_atom.max:.2f}")
    saturated = [(k, v) for k, v in ranked if v >= UNIT_THRESHOLDS.get(k, threshold)]
    if saturated:
        top, u_top = saturated[0]
        return Verdict(False, top, f"not the atomic unit: {UNIT_LABELS.get(top, top)} is busiest "
                       f"({u_top:.2f}; atomic unit {u:.2f})", tuple(evidence))
    busiest = "the atomic unit" if u >= u_top else UNIT_LABELS.get(top, top)
    return Verdict(False, "none", f"no unit is saturated (busiest: {busiest}, "
                   f"{max(u, u_top):.2f}): latency- or dependency-bound", tuple(evidence))


# ---- validation ------------------------------------------------------------------------------


def relative_error(predicted: float, measured: float) -> float:
    if measured == 0:
        raise InvalidArgumentError("measured value is zero: relative error undefined")
    return abs(predicted - measured) / abs(measured)


def error_summary(pairs: Iterable[tuple[float, float]], *, median_limit: float = 0.10,
                  max_limit: float = 0.25) -> dict:
    """Median and max relative error of (predicted, measured) pairs against the issue's limits."""
    errs = [relative_error(p, m) for p, m in pairs]
    if not errs:
        return {"count": 0, "median": None, "max": None, "passes": None}
    med, mx = statistics.median(errs), max(errs)
    return {"count": len(errs), "median": med, "max": mx, "median_limit": median_limit,
            "max_limit": max_limit, "passes": med <= median_limit and mx <= max_limit}
