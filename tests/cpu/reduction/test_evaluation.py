import math

import pytest

from smemkit.reduction.evaluation import (
    baseline_table,
    baselines_at,
    dispatch_vs_best_min,
    geomean_64k,
)


def _records():
    return [
        {"workload": "a", "N": 65536, "baseline_ms": 4.0, "best_cluster_ms": 2.0, "dispatched_ms": 2.0},
        {"workload": "b", "N": 65536, "baseline_ms": 9.0, "best_cluster_ms": 1.0, "dispatched_ms": 1.0},
        {"workload": "a", "N": 4096, "baseline_ms": 1.0, "best_cluster_ms": 2.0, "dispatched_ms": 1.25},
    ]


def test_geomean_and_dispatch_by_hand():
    table = baseline_table({"records": [
        {"workload": "a", "N": 65536, "variant": "compile", "ms": 8.0},
        {"workload": "a", "N": 65536, "variant": "compile_max", "ms": 3.0},
        {"workload": "b", "N": 65536, "variant": "triton", "ms": 4.0},
        {"workload": "b", "N": 65536, "variant": "compile", "ms": None},  # not measured: ignored
        {"workload": "a", "N": 4096, "variant": "triton", "ms": 0.5},
    ]})
    want = {"compile": 8.0, "compile_max": 3.0, "cuda": 4.0, "best": 3.0}
    assert baselines_at(table, _records()[0]) == want
    g = geomean_64k(_records(), table)
    assert g["cuda"] == pytest.approx(math.sqrt(2.0 * 9.0))
    assert g["best"] == pytest.approx(math.sqrt(1.5 * 4.0))  # a: 3/2, b: triton 4/1
    assert g["compile"] == pytest.approx(4.0)  # only workload a has it
    assert dispatch_vs_best_min(_records(), table) == pytest.approx(0.5 / 1.25)  # the 4K point loses


def test_crossovers_predicted_and_measured_per_workload():
    from types import SimpleNamespace

    from smemkit.reduction.cost_model import Terms, Verdict
    from smemkit.reduction.evaluation import crossovers

    def point(w, N, won):
        return SimpleNamespace(workload=w, shape=SimpleNamespace(N=N), measured_profitable=won)

    pays = Verdict((Terms(2, True, None, t_save=1.0),))
    loses = Verdict((Terms(2, True, None, t_ctrl=1.0),))
    points = [point("a", 8192, True), point("a", 4096, False), point("a", 16384, True),
              point("b", 4096, False), point("b", 8192, False)]
    verdicts = {("a", 4096): loses, ("a", 8192): loses, ("a", 16384): pays,
                ("b", 4096): loses, ("b", 8192): pays}
    assert crossovers(points, verdicts) == {"a": (16384, 8192), "b": (8192, None)}
