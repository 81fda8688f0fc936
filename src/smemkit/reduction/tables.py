"""Embedded measurement tables the cost model can run from without a GPU.

- ``h100_sxm``: the CREDIT paper's H100 measurements of *its own* kernels (repository data in
  ``data/h100_credit.json``, with their byte metadata: b_B, b_reread, b_keep, q per stage).
- ``h200_sxm``: smemkit's kernels measured on the H200 by ``benchmarks/credit_eval.py``
  (``data/h200_smemkit.json``: T_B and which kernel gave it, T_ctrl per P, resident clusters, and
  the Triton kernel's time where it was timed).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from functools import cache
from importlib import resources

from smemkit.reduction.cost_model import KernelShape, Measured, shape_of
from smemkit.reduction.workloads import BUILTIN


@dataclass(frozen=True)
class TablePoint:
    """One measured (workload, M, N): the model's inputs and what was measured afterwards."""

    workload: str
    shape: KernelShape
    measured: Measured
    cluster_ms: dict[int, float]
    source: str
    # (T_B's kernel ms, best cluster kernel ms) per round of a head to head, where measured
    head_to_head: tuple[tuple[float, float], ...] = ()

    @property
    def measured_ratio(self) -> float:
        """T_B / best cluster time as measured: the median ratio of their head to head where there
        is one (credit_eval.py: alternating rounds), else of the single timings."""
        if self.head_to_head:
            return statistics.median(b / c for b, c in self.head_to_head)
        return self.single_timing_ratio

    @property
    def single_timing_ratio(self) -> float:
        """T_B / best cluster time by one timing of each kernel."""
        return self.measured.baseline_ms / min(self.cluster_ms.values())

    @property
    def measured_profitable(self) -> bool:
        """Whether the best cluster kernel beat the non-cluster one (what the model predicts)."""
        return self.measured_ratio > 1

    @property
    def single_timing_profitable(self) -> bool:
        """The same by one timing of each kernel (T_B from the calibration, the cluster kernels'
        later): misorders points decided by < 2.5 % (a head to head of those points on the H200,
        commit 4855f15)."""
        return self.single_timing_ratio > 1


def _load(name: str) -> dict:
    return json.loads(resources.files("smemkit").joinpath(f"reduction/data/{name}").read_text())


def _ints(d: dict | None) -> dict[int, float]:
    return {int(k): v for k, v in (d or {}).items() if v is not None}


@cache
def h100_credit() -> tuple[TablePoint, ...]:
    """CREDIT's H100 table; W(M, P) as the paper assumes (one staged CTA per SM: S/P clusters)."""
    data = _load("h100_credit.json")
    meta = data["workload_model_params"]
    points = []
    for r in data["records"]:
        m = meta[r["workload"]]
        keep = m["staged_bytes_per_element"]
        shape = KernelShape(r["rows"], r["N"], m["modeled_bytes_per_element"],
                            m["reread_bytes_per_element"], keep, tuple(m["reductions_per_stage"]),
                            lambda P, N=r["N"], keep=keep: math.ceil(N / P) * keep)
        controls = _ints(r["control_excess_ms"])
        measured = Measured(r["cuda_ms"], controls, {P: data["sm_count"] // P for P in controls})
        points.append(TablePoint(r["workload"], shape, measured, _ints(r["cluster_ms"]),
                                 "CREDIT repository results/h100 (" + data["source"][:60] + "...)"))
    return tuple(points)


def points_from(records: list[dict], source: str) -> tuple[TablePoint, ...]:
    """Table points from ``benchmarks/credit_eval.py`` records (its JSON, or the embedded copy)."""
    points = []
    for r in records:
        spec = BUILTIN[r["workload"]]
        measured = Measured(r["baseline_ms"], _ints(r["control_excess_ms"]),
                            {int(k): v for k, v in r["resident_clusters"].items()},
                            baseline_variant=r["baseline_variant"],
                            baseline_ctas_per_sm=r.get("baseline_ctas_per_sm"),
                            triton_ms=r.get("triton_ms"))
        rounds = (r.get("head_to_head") or {}).get("rounds", ())
        points.append(TablePoint(r["workload"], shape_of(spec, r["M"], r["N"]), measured,
                                 _ints(r["cluster_ms"]), source,
                                 tuple((x["baseline"], x["cluster"]) for x in rounds)))
    return tuple(points)


@cache
def h200_smemkit() -> tuple[TablePoint, ...]:
    """smemkit's H200 calibration (benchmarks/results/h200/credit_eval.json, inputs only)."""
    data = _load("h200_smemkit.json")
    return points_from(data["records"], data["source"])


TABLES = {"h100_sxm": h100_credit, "h200_sxm": h200_smemkit}
# Tables that timed smemkit's own kernels, so dispatch may follow them (the H100 one timed CREDIT's).
OWN_KERNELS = ("h200_sxm",)


def table_for(profile_name: str) -> tuple[TablePoint, ...]:
    """The embedded table of a profile (empty when none is embedded)."""
    loader = TABLES.get(profile_name)
    return loader() if loader else ()
