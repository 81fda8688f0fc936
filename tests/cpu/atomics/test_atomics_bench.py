"""benchmarks/atomics.py --dry-run: the whole pipeline without a GPU (nothing in it is measured)."""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

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
    regimes = [r["name"] for r in data["histogram"]["regimes"]]
    assert regimes == ["dram", "l2_u8_256", "l2_u8_64"]
    want = {(g, i, k) for g in regimes for i in bench.HIST_INPUTS for k in bench.HIST_KERNELS}
    assert "hist_lane" in bench.HIST_KERNELS
    assert {(r["regime"], r["input"], r["kernel"]) for r in hist} == want
    assert {r["entry"] for r in hist if r["regime"] != "dram"} == {k + "_u8" for k in bench.HIST_KERNELS}
    single = next(r for r in hist if r["input"] == "single" and r["kernel"] == "hist_inc")
    assert single["distinct_mean"] == 1 and single["wavefronts_mean"] == 1
    assert single["lanes_per_bank_mean"] == 32
    assert all(r["predicted"]["u_atom"]["median"] <= 1.0 + 1e-9 for r in hist)
    for r in hist:  # the model's prediction and U are recorded per kernel
        assert {"atomic_cycles_per_sm", "key_stream_cycles", "wavefronts_per_inst"} <= set(r["model"])
        if r["kernel"] == "hist_lane":  # lane l always in bank l
            assert r["model"]["wavefronts_per_inst"] == 1.0
        if r["kernel"] == "hist_add":  # ATOMS.ADD pays for every lane in the busiest bank
            assert r["model"]["wavefronts_per_inst"] == r["lanes_per_bank_mean"]
    study = data["histogram"]["case_study"]
    assert {(c["regime"], c["input"]) for c in study} == {(g, i) for g in regimes for i in bench.HIST_INPUTS}
    for c in study:
        assert set(c["ms"]) == set(bench.HIST_KERNELS) and set(c["u_model"]) == set(bench.HIST_KERNELS)
        assert c["pair_ratio"] >= 1 and c["lane_speedup_vs_add"] > 0
    # the dry run's stand-in times are the model's: on one bin the pair is 32 wavefronts apart
    one = next(c for c in study if c["regime"] == "l2_u8_256" and c["input"] == "single")
    assert one["pair_differs_20pct"] and one["lane_speedup_vs_add"] > 20
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
    assert s["lanes_per_bank_mean"] == 4  # 4 lanes in each of 8 banks
    s = bench.instruction_stats(torch.full((256,), 7, dtype=torch.int32), 256)
    assert s["distinct_mean"] == 1 and s["aggregate_instructions"] == s["instructions"] == 8
    assert s["wavefronts_mean"] == 1 and s["lanes_per_bank_mean"] == 32


def test_instruction_stats_uint8_keys(bench):
    import torch

    # 8-bit keys: 16 per lane per uint4, component c of lane l = key 16 l + c
    keys = (torch.arange(512) % 256).to(torch.uint8)
    s = bench.instruction_stats(keys, 256)
    # component c: keys (16 l + c) mod 256 -> 16 distinct (lanes l, l + 16 share one) in 2 banks
    # (c, c + 16) -> 8 words and 16 lanes per bank
    assert s["instructions"] == 16 and s["distinct_mean"] == 16
    assert s["wavefronts_mean"] == 8 and s["lanes_per_bank_mean"] == 16
    # 64 bins: bin = key & 63, so lanes l and l + 4 (keys 64 apart) share a word
    s = bench.instruction_stats(keys, 64)
    assert s["distinct_mean"] == 4 and s["wavefronts_mean"] == 2 and s["lanes_per_bank_mean"] == 16


def test_hist_cost_follows_the_table_rules(bench):
    stats = {"instructions": 10, "wavefronts_mean": 3.0, "lanes_per_bank_mean": 3.5}
    assert bench.hist_cost("hist_inc", stats) == (10, 3.0, bench.ncu.INST_ATOM)
    assert bench.hist_cost("hist_add", stats)[:2] == (10, 3.5)  # ATOMS.ADD: most lanes in a bank
    assert bench.hist_cost("hist_lane", stats, passes=8)[:2] == (80, 1.0)  # lane l in bank l


def test_make_keys_uint8(bench):
    import torch

    for kind in bench.HIST_INPUTS:
        for nbins in (256, 64):
            k = bench.make_keys(kind, 4096, "cpu", nbins=nbins, key_bytes=1)
            assert k.dtype == torch.uint8 and k.numel() == 4096
            bins = torch.bincount(k.to(torch.int64) & (nbins - 1), minlength=nbins)
            if kind == "single":
                assert bins[7] == 4096
            elif kind == "skewed":
                assert bins[0] > bins[nbins // 2] and bins[:8].sum() > 4096 // 3  # ~1/2 of the keys
            else:
                assert (bins > 0).sum() == nbins
    k = bench.make_keys("skewed", 4096, "cpu")  # the DRAM regime's keys are unchanged: int32
    assert k.dtype == torch.int32


def test_regimes_and_launch_order(bench):
    regimes = bench.hist_regimes(None, gpu=True)
    l2 = [r for r in regimes if r.l2_resident]
    # the L2 regimes' keys fit the H200's L2 (60 MB) with room (two partitions: <= 30 MB each)
    assert l2 and all(r.n_keys * r.key_bytes <= 16 * 2**20 for r in l2)
    assert regimes[0].name == "dram" and regimes[0].n_keys == bench.HIST_N and regimes[0].passes == 1
    assert bench.hist_regimes(1 << 20, gpu=True)[0].n_keys == 1 << 20
    assert all(r.n_keys == bench.HIST_DRY_N for r in bench.hist_regimes(None, gpu=False))
    plan = bench.hist_plan(regimes)
    assert len(plan) == len(regimes) * len(bench.HIST_INPUTS) * len(bench.HIST_KERNELS)
    # the DRAM regime's order (input-major, then kernels) stays the prefix, so a report of that
    # regime alone lines up with the start of a full one
    first = [(i, k) for i in bench.HIST_INPUTS for k in bench.HIST_KERNELS]
    head = len(first)
    assert [(i, k) for _, i, k in plan[:head]] == first and {r.name for r, _, _ in plan[:head]} == {"dram"}


def test_mix_service_adds_classes(bench):
    from smemkit.atomics.table import ServiceCurve, load_table

    t = load_table(Path(__file__).parent / "data" / "hand_table.json")
    for c in [c for c in t.curves.values() if c.variant == "cas.int32.ret"]:
        # the hand table has cas.int32.ret; the noret mix takes cas.int32.noret
        t.add(ServiceCurve("cas.int32.noret", c.pattern, c.scope, c.wavefronts, c.n, c.cycles, c.sass))
    s = bench.mix_service(t, "mix.int32.noret", "distinct_banks", 2, "private")
    assert s(8) == pytest.approx(0.75 * 2.0 + 0.25 * 3.0)


def test_fixed_lane_kernel_counts_one_add_per_step_on_one_bin(bench):
    """hist_lane_fix's instruction count: one add per warp step when every lane's 16 uint8 keys
    share a bin, 16 increments when none does, 17 when the warp is mixed."""
    single = bench.make_keys("single", 32 * 16 * 4, "cpu", key_bytes=1, nbins=64)
    s = bench.instruction_stats(single, 64)
    assert s["fix_instructions"] == 4 and bench.hist_cost("hist_lane_fix", s, passes=2)[:2] == (8, 1.0)
    mixed = single.clone()
    mixed[1] = 8  # lane 0 of the first step now holds two bins
    assert bench.instruction_stats(mixed, 64)["fix_instructions"] == 17 + 3
    uniform = torch.arange(32 * 16, dtype=torch.uint8) % 64  # consecutive keys differ
    assert bench.instruction_stats(uniform, 64)["fix_instructions"] == 16
