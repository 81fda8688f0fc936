"""benchmarks/atomics.py --dry-run: the whole pipeline without a GPU (nothing in it is measured)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("atomics_bench", ROOT / "benchmarks" / "atomics.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_writes_the_results_layout(bench, tmp_path):
    out = tmp_path / "atomics.json"
    variants = ("add.int32.noret,inc.int32.noret,add.float32.noret,cas.int32.ret,cas.int32.noret,"
                "mix.int32.noret")
    assert bench.main(["--dry-run", "--quick", "--variants", variants, "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["status"].startswith("dry-run") and data["arch"] == "sm_90a"
    assert set(data) >= {"device", "compile", "sass", "service_table", "validation", "histogram"}
    assert not any(v["spills"] for k, v in data["compile"].items() if k != "histograms")
    table = data["service_table"]
    assert table["source"] == "placeholder"
    assert {c["variant"] for c in table["curves"]} == set(variants.split(","))
    recs = data["validation"]["records"]
    assert recs and all({"kind", "config", "predicted", "measured", "error"} <= set(r) for r in recs)
    assert {r["kind"] for r in recs} == {"n_off_grid", "pattern_held_out", "think", "cas_fraction"}
    assert data["validation"]["summary"]["count"] == sum(r["atomic_bound"] for r in recs)
    assert data["validation"]["summary_all"]["count"] == len(recs)
    hist = data["histogram"]["records"]
    want = {(i, k) for i in bench.HIST_INPUTS for k in bench.HIST_KERNELS}
    assert {(r["input"], r["kernel"]) for r in hist} == want
    single = next(r for r in hist if r["input"] == "single" and r["kernel"] == "hist_inc")
    assert single["distinct_mean"] == 1 and single["wavefronts_mean"] == 1
    assert all(r["predicted"]["u_atom"]["median"] <= 1.0 + 1e-9 for r in hist)
    if data["sass"]["status"] == "ok":
        assert data["sass"]["variants"]["add.float32.noret"]["kind"] == "cas_loop"
        assert data["sass"]["variants"]["inc.int32.noret"]["opcodes"] == ["ATOMS.POPC.INC.32"]


def test_instruction_stats_by_hand(bench):
    import torch

    # one warp instruction group: 32 lanes x 4 components; component c of lane l = key 4l + c
    keys = torch.arange(128, dtype=torch.int32)
    s = bench.instruction_stats(keys, 256)
    # component c: bins 4l + c for l = 0..31 -> 32 distinct bins; banks (4l + c) % 32: 8 banks x 4 words
    assert s["instructions"] == 4 and s["distinct_mean"] == 32 and s["wavefronts_mean"] == 4
    s = bench.instruction_stats(torch.full((256,), 7, dtype=torch.int32), 256)
    assert s["distinct_mean"] == 1 and s["aggregate_instructions"] == s["instructions"] == 8


def test_mix_service_adds_classes(bench):
    from smemkit.atomics.table import ServiceCurve, load_table

    t = load_table(Path(__file__).parent / "data" / "hand_table.json")
    for c in [c for c in t.curves.values() if c.variant == "cas.int32.ret"]:
        # the hand table has cas.int32.ret; the noret mix takes cas.int32.noret
        t.add(ServiceCurve("cas.int32.noret", c.pattern, c.scope, c.wavefronts, c.n, c.cycles, c.sass))
    s = bench.mix_service(t, "mix.int32.noret", "distinct_banks", 2, "private")
    assert s(8) == pytest.approx(0.75 * 2.0 + 0.25 * 3.0)
