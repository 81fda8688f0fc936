"""The offload benchmark's summary counts (benchmarks/offload_ops.py), on synthetic records and on
the recorded H200 run."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _bench(name: str = "offload_ops"):
    spec = importlib.util.spec_from_file_location(f"{name}_bench", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_floor_is_the_cheaper_path_built_from_parts_timed_alone():
    floor_of = _bench().floor_of
    assert floor_of(30.0, 40.0, 37.0) == 37.0  # the host kernel beside the HBM part
    assert floor_of(30.0, 40.0, None) == 40.0  # no kernel path at this batch: copy then op
    assert floor_of(50.0, 40.0, 37.0) == 50.0  # the HBM part sets it
    assert floor_of(20.0, None, None) == 20.0  # no host part


def test_attention_summary_counts_misses_and_their_floors():
    def rec(method, r, ctx, ms, ideal, **extra):
        return {"batch": 8, "context": ctx, "r": r, "method": method, "ms": ms, "ideal_ms": ideal, **extra}

    records = [
        rec("smemkit", "0", 1024, 1.3, 1.0, floor_ms=1.3), rec("hbm", "0", 1024, 1.3, 1.0),  # SDPA over bar
        rec("smemkit", "0", 4096, 1.0, 1.0, floor_ms=1.0), rec("hbm", "0", 4096, 0.9, 1.0),  # 11 % over SDPA
        rec("smemkit", "0.1", 1024, 1.2, 1.0, floor_ms=1.05),  # a miss whose floor is under the bar
        rec("smemkit", "0.5", 1024, 1.1, 1.0, floor_ms=1.0),  # met
    ]
    s = _bench("offload_attention").summary(records)
    assert s["within_1.12x_ideal"] == [2, 4]
    assert s["r0_within_5pct_of_hbm"] == [1, 2]
    assert s["misses_with_floor_over_1.12x_ideal"] == [1, 2]


def _rec(method, r, batch, ms, ideal, **extra):
    return {"shape": [64, 64], "batch": batch, "r": r, "method": method, "ms": ms, "ideal_ms": ideal, **extra}


def test_summary_counts_each_target_over_its_own_points():
    records = [
        _rec("smemkit", "0", 1, 1.04, 1.0), _rec("cublas_hbm", "0", 1, 1.0, 1.0),  # r = 0: within 5 %
        _rec("smemkit", "0", 8, 1.06, 1.0), _rec("cublas_hbm", "0", 8, 1.0, 1.0),  # 6 % slower
        _rec("smemkit", "r*", 1, 1.11, 1.0, ideal_copy_ms=1.0),  # within both ideals
        _rec("smemkit", "0.05", 1, 1.20, 1.0, ideal_copy_ms=1.10, floor_ms=1.13),  # miss, floor over bar
        _rec("smemkit", "0.1", 8, 1.20, 1.0, floor_ms=1.05),  # a miss whose floor is under the bar
        _rec("smemkit", "0.25", 8, 1.10, 1.0, floor_ms=1.13),  # met: not a miss
        _rec("smemkit", "r*", 512, 2.0, 1.5, direct_ms=1.9), _rec("cublas_hbm", "r*", 512, 1.95, 1.5),
        _rec("smemkit", "r_hide", 512, 2.2, 1.5, direct_ms=2.3), _rec("cublas_hbm", "r_hide", 512, 2.0, 1.5),
        {"shape": [64, 64], "batch": 1, "r": "0.1", "method": "smemkit", "error": "failed"},  # no time
    ]
    s = _bench().summary(records)
    assert s["offloaded_within_1.12x_ideal"] == [2, 6]
    assert s["offloaded_within_1.12x_ideal_copy"] == [2, 2]
    assert s["r0_within_5pct_of_cublas"] == [1, 2]
    assert s["batch512_rstar_rhide_within_5pct_of_cublas"] == [1, 2]
    assert s["large_batch_direct_faster_than_taken_path"] == [1, 2]
    assert s["misses_with_floor_over_1.12x_ideal"] == [1, 4]  # the batch-512 misses have no floor


def test_summary_of_the_recorded_run_matches_the_docs():
    """benchmarks/results/h200/offload_ops.json (docs/offload.md)."""
    doc = json.loads((ROOT / "benchmarks" / "results" / "h200" / "offload_ops.json").read_text())
    s = _bench().summary(doc["records"])
    assert s == doc["summary"]  # what the run wrote is what the records give
    assert s["offloaded_within_1.12x_ideal"] == [77, 112]
    assert s["offloaded_within_1.12x_ideal_copy"] == [96, 112]
    assert s["r0_within_5pct_of_cublas"] == [16, 16]
    assert s["batch512_rstar_rhide_within_5pct_of_cublas"] == [2, 8]
    assert s["large_batch_direct_faster_than_taken_path"] == [0, 28]
    assert s["misses_with_floor_over_1.12x_ideal"] == [28, 35]


def test_attention_summary_of_the_recorded_run_matches_the_docs():
    """benchmarks/results/h200/offload_attention.json (docs/offload.md)."""
    doc = json.loads((ROOT / "benchmarks" / "results" / "h200" / "offload_attention.json").read_text())
    s = _bench("offload_attention").summary(doc["records"])
    assert s == doc["summary"]
    assert s["within_1.12x_ideal"] == [30, 40]
    assert s["r0_within_5pct_of_hbm"] == [8, 8]
    assert s["misses_with_floor_over_1.12x_ideal"] == [6, 10]
