"""Speedups of the CREDIT evaluation (paper Table IV, dispatch ratio), from benchmark records.

Shared by ``benchmarks/credit_eval.py`` (the summary it writes) and ``benchmarks/report_credit.py``
(the report), so both quote the same numbers. "best" is the fastest of torch.compile (default and
max-autotune), Triton and the non-cluster CUDA kernel at that (workload, N).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from smemkit.reduction.cost_model import Verdict, crossover

BASELINES = ("compile", "compile_max", "triton")
WIDTH_64K = 65536


def baseline_table(reduction: dict) -> dict[tuple[str, int, str], float]:
    """(workload, N, method) -> ms from a ``benchmarks/reduction.py`` result."""
    return {(r["workload"], r["N"], r["variant"]): r["ms"] for r in reduction["records"] if r["ms"]}


def baselines_at(table: dict, record: dict) -> dict[str, float]:
    """Every baseline's time at a credit_eval record's (workload, N), 'cuda' and 'best' included."""
    times = {m: table.get((record["workload"], record["N"], m)) for m in BASELINES}
    times = {m: t for m, t in times.items() if t}
    times["cuda"] = record["baseline_ms"]
    times["best"] = min(times.values())
    return times


def geomean_64k(records: Iterable[dict], table: dict) -> dict[str, float]:
    """Geomean over workloads at N = 64K of baseline time / best cluster time, per baseline."""
    ratios: dict[str, list[float]] = {}
    for r in records:
        if r["N"] != WIDTH_64K:
            continue
        for m, t in baselines_at(table, r).items():
            ratios.setdefault(m, []).append(t / r["best_cluster_ms"])
    return {m: math.exp(sum(map(math.log, v)) / len(v)) for m, v in ratios.items()}


def dispatch_ratio(table: dict, record: dict) -> float:
    """Best-baseline / dispatched-op time at a credit_eval record's (workload, N)."""
    return baselines_at(table, record)["best"] / record["dispatched_ms"]


def dispatch_vs_best_min(records: Iterable[dict], table: dict) -> float:
    """The smallest best-baseline / dispatched-op time over the records (>= 0.97 is the target)."""
    return min(dispatch_ratio(table, r) for r in records)


def crossovers(points: Iterable, verdicts: Mapping[tuple[str, int], Verdict]
               ) -> dict[str, tuple[int | None, int | None]]:
    """Per workload, (predicted N*, measured N*): the smallest width whose verdict says the
    cluster kernel pays, and the smallest whose measured cluster kernel won (paper Fig. 4).
    ``points`` are table points (``tables.points_from``); ``verdicts`` by (workload, N)."""
    points = list(points)
    out = {}
    for name in sorted({p.workload for p in points}):
        widths = sorted(p.shape.N for p in points if p.workload == name)
        won = {p.shape.N for p in points if p.workload == name and p.measured_profitable}
        predicted = crossover({N: v for (w, N), v in verdicts.items() if w == name})
        out[name] = (predicted, next((N for N in widths if N in won), None))
    return out
