"""The worked example of issue 7 item 4 (benchmarks/tiling_worked_example.py and
benchmarks/kernels/tiling_worked_example.cu), on the CPU: the kernel compiles for sm_90a through NVRTC in
its three layouts without local memory, its offset functions are the analyzer's layouts, the pattern
predicts the conflict and its removal, and the dry run writes complete JSON."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from smemkit.runtime.paths import find_tool
from smemkit.tiling import Swizzle, advise, analyze
from smemkit.tiling.examples import BUILTIN

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "tiling_worked_example.py"
GXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


@pytest.fixture(scope="module")
def twe():
    spec = importlib.util.spec_from_file_location("tiling_worked_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def variants(twe):
    _advice, found = twe.advisor_check(regs=64)
    return found


def test_advisor_recommends_the_compiled_variants(twe, variants):
    assert [v.name for v in variants] == list(twe.VARIANTS)
    unpadded, padded, swizzled = (v.layout for v in variants)
    assert (unpadded.pad, unpadded.transform) == (0, None)
    assert (padded.pad, padded.transform) == (4, None)
    assert (swizzled.pad, swizzled.transform) == (0, Swizzle(3, 2, 3))
    advice = {a.array: a for a in advise(twe.kernel_pattern())}
    assert advice["As"].padding.layout == padded and advice["As"].swizzles[0].layout == swizzled
    assert advice["Bs"].conflict_free
    assert variants[1].defines["SMK_AS_PAD"] == 4 and "SMK_AS_SWZ_B" not in variants[1].defines
    assert {k: variants[2].defines[k] for k in ("SMK_AS_SWZ_B", "SMK_AS_SWZ_M", "SMK_AS_SWZ_S")} == {
        "SMK_AS_SWZ_B": 3, "SMK_AS_SWZ_M": 2, "SMK_AS_SWZ_S": 3}
    assert len({v.kernel for v in variants}) == 3


def test_as_accesses_are_the_builtin_pattern(twe):
    built = analyze(BUILTIN["cp_async_double_buffer"]())
    assert (built.wavefronts, built.ideal) == (2176, 384)
    assert twe.builtin_tie_in() == {"builtin": "cp_async_double_buffer", "wavefronts": 2176, "ideal": 384}


def test_predictions_conflict_unpadded_and_ideal_after(twe, variants):
    problem = twe.Problem(4096, 4096, 4096)
    preds = {v.name: twe.predict(v.pattern, problem) for v in variants}
    un = preds["unpadded"]["per_cta_per_ktile"]
    # 4 warps x 8 float4 reads of As, each 8-way (32 wavefronts, ideal 4); Bs: 4 warps x 128 float4
    # reads at one address per warp, 2 wavefronts each (pair merge, measured on the H200)
    assert un["As_load_wavefronts"] == 4 * 8 * 32
    assert un["Bs_load_wavefronts"] == 4 * 128 * 2
    assert un["load_wavefronts"] == 2048 and un["load_ideal"] == 1152 and un["load_instructions"] == 544
    # cp.async rows: 4 (As) + 2 (Bs) 16-byte copies per thread, one 128-byte row per quarter-warp
    assert un["store_wavefronts"] == un["store_ideal"] == 4 * (4 + 2) * 4 and un["store_instructions"] == 24
    degrees = {a["label"]: a["degree"] for a in preds["unpadded"]["per_access_per_cta_per_ktile"]}
    assert sorted(degrees.values()) == [1.0, 1.0, 1.0, 8.0]
    for name in ("padded", "swizzled"):
        per = preds[name]["per_cta_per_ktile"]
        assert per["load_wavefronts"] == per["load_ideal"] == 1152, name
        assert per["As_load_wavefronts"] == 4 * 8 * 4, name
        assert per["store_wavefronts"] == per["store_ideal"] == 96, name
        assert analyze(next(v for v in variants if v.name == name).pattern).conflict_free
    launch = preds["unpadded"]["per_launch"]
    assert preds["unpadded"]["ctas"] == 64 * 128 and preds["unpadded"]["ktiles"] == 128
    assert launch["load_wavefronts"] == 2048 * 64 * 128 * 128
    assert launch["store_wavefronts"] == 96 * 64 * 128 * 128


def test_shared_memory_sizes(variants):
    sizes = {v.name: v.smem_bytes for v in variants}
    assert sizes == {"unpadded": 16384 + 8192, "padded": 2 * 64 * 36 * 4 + 8192, "swizzled": 16384 + 8192}
    padded = variants[1].pattern
    assert padded.arrays["Bs"].base == 2 * 64 * 36 * 4  # Bs follows the padded As, 128-byte aligned


def test_kernel_compiles_for_sm90a_in_every_variant(isolated_cache, twe, variants):
    for v in variants:
        module = twe.compile_variant(v, "sm_90a")
        usage = module.resources[v.kernel]
        assert not usage.spills and usage.stack_bytes == 0, (v.name, usage)
        assert usage.static_smem_bytes == 0  # dynamic shared memory only
        assert 0 < usage.registers <= 128
        if find_tool("cuobjdump"):
            sass = twe.sass_info(module, v.kernel)
            assert sass is not None and sass["ok"], (v.name, sass)
            assert sass["LDS.128"] == 8 + 128 and sass["LDGSTS"] == 12


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler")
def test_kernel_offsets_are_the_analyzer_layouts(twe, variants):
    for v in variants:
        check = twe.host_offset_check(v)
        assert check["ok"] is True, (v.name, check)


def test_parse_sass_counts_shared_instructions(twe):
    text = """
        /*03c0*/              @!PT LDS RZ, [RZ] ;                       /* 0x00000000fffff984 */
        /*03f0*/                   LDGSTS.E.BYPASS.128 [R19], desc[UR10][R4.64] ;  /* 0x0000000004137fae */
        /*0c30*/                   LDS.128 R20, [R20] ;                 /* 0x0000000014147984 */
        /*0c40*/              @P0  LDS R24, [R42+0x10] ;                /* 0x000000002a187984 */
        /*0c50*/                   STS.64 [R2], R4 ;                    /* 0x000000002a187984 */
        /*0c60*/                   FFMA R1, R2, R3, R1 ;                /* 0x000000002a187984 */
        /*0c70*/                   STL [R1], R2 ;                       /* 0x000000002a187984 */
    """
    got = twe.parse_sass(text)
    assert got == {"LDS.128": 1, "LDS_other": 1, "LDS_never_executed": 1, "STS": 1, "LDGSTS": 1,
                   "LDL_STL": 1, "FFMA": 1}


def test_choose_metrics_keeps_required_and_listed(twe):
    required = [m for _, m in twe.METRICS[: twe.REQUIRED_METRICS]]
    chosen, dropped = twe.choose_metrics({"smsp__sass_inst_executed_op_ldgsts"})
    assert chosen == [*required, "smsp__sass_inst_executed_op_ldgsts.sum"]
    assert len(dropped) == len(twe.METRICS) - len(chosen)
    chosen, dropped = twe.choose_metrics(None)  # ncu could not say: ask for all
    assert len(chosen) == len(twe.METRICS) and dropped == []


def test_records_compare_measurements(isolated_cache, twe, variants):
    problem = twe.Problem(256, 256, 256)
    records = []
    for v in variants:
        pred = twe.predict(v.pattern, problem)
        launch = pred["per_launch"]
        measured = {  # as if ncu agreed on loads and put the cp.async writes under the LDGSTS counter
            "wavefronts_load": launch["load_wavefronts"], "wavefronts_store": 0,
            "wavefronts_ldgsts": launch["store_wavefronts"],
            "instructions_load": launch["load_instructions"], "instructions_store": 0}
        gpu = {"ms": 2.0 if v.name == "unpadded" else 1.0, "gflops": 1.0, "rel_err": 1e-7, "correct": True,
               "p20_ms": 1.0, "p80_ms": 2.0, "samples": 20, "max_abs_err_over_max_ref": 1e-7,
               "driver_blocks_per_sm": 9}
        module = twe.compile_variant(v, "sm_90a")
        records.append(twe.variant_record(v, module, pred, {"ok": None}, None, gpu, measured))
    twe.add_deltas(records)
    for r in records:
        assert r["load_match"] is True and r["store_counter"] == "ldgsts" and r["store_match"] is True
        assert r["load_instructions_match"] == "model"
    assert records[1]["load_wavefronts_saved_vs_unpadded"] == {
        "predicted": (1024 - 128) * problem.ctas * problem.ktiles,
        "measured": (1024 - 128) * problem.ctas * problem.ktiles, "match": True}
    assert records[2]["speedup_vs_unpadded"] == 2.0


def test_problem_sizes_must_tile(twe):
    with pytest.raises(twe.WorkedExampleError):
        twe.Problem(100, 4096, 4096)


def test_dry_run_writes_complete_json(isolated_cache, twe, tmp_path):
    out = tmp_path / "twe.json"
    assert twe.main(["--dry-run", "--out", str(out), "--size", "512"]) == 0

    def no_constants(name):
        raise ValueError(f"non-standard JSON constant {name}")

    data = json.loads(out.read_text(), parse_constant=no_constants)
    assert data["dry_run"] is True and data["issue"] == 7 and "software" in data["device"]
    command = data["provenance"]["command"]
    assert command.endswith(f"benchmarks/tiling_worked_example.py --dry-run --out {out} --size 512")
    assert data["problem"]["ctas"] == 8 * 16 and data["problem"]["ktiles"] == 16
    assert data["advisor"]["padding"]["summary"] == "pad 4 elements"
    assert data["advisor"]["swizzles"][0]["summary"] == "Swizzle(3,2,3)"
    assert data["ncu"]["skipped"] == "dry run" and data["reference"] is None
    assert [r["variant"] for r in data["variants"]] == ["unpadded", "padded", "swizzled"]
    for r in data["variants"]:
        for key in ("layout", "predicted_load_wavefronts", "predicted_store_wavefronts",
                    "measured_load_wavefronts", "measured_store_wavefronts", "measured_load_instructions",
                    "ms", "gflops", "rel_err", "registers", "spills", "smem_bytes"):
            assert key in r, key
        assert r["measured_load_wavefronts"] is None and r["ms"] is None and r["rel_err"] is None
        assert r["spills"] is False
        if GXX:
            assert r["host_offset_check"]["ok"] is True
    un, pad, swz = data["variants"]
    scale = 8 * 16 * 16
    assert un["predicted_load_wavefronts"] == 2048 * scale
    assert pad["predicted_load_wavefronts"] == swz["predicted_load_wavefronts"] == 1152 * scale
    assert pad["load_wavefronts_saved_vs_unpadded"]["predicted"] == 896 * scale


FAKE_NCU = '''#!{python}
"""Stands in for ncu: answers --version and --query-metrics, and for a profile writes the CSV that
ncu would (one row per variant kernel, values from the spec's predictions) and the driver's JSON."""
import json, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (fake)")
    sys.exit(0)
if args == ["--query-metrics"]:
    print("Device GH100\\nMetric Name   Metric Description")
    for name in {listed!r}:
        print(name + "   something")
    sys.exit(0)
log = args[args.index("--log-file") + 1]
out = args[args.index("--driver-out") + 1]
metrics = args[args.index("--metrics") + 1].split(",")
values = json.load(open({values_path!r}))
rows = ['"ID","Process ID","Process Name","Host Name","Kernel Name",' + ",".join(f'"{{m}}"' for m in metrics)]
rows.append('"","","","",""' + ',""' * len(metrics))
for i, (kernel, vals) in enumerate(values.items()):
    cells = [f'"{{vals.get(m, "n/a")}}"' for m in metrics]
    rows.append(f'"{{i}}","1","python3","h","{{kernel}}",' + ",".join(cells))
open(log, "w").write("\\n".join(rows) + "\\n")
json.dump({{"launched": list(values), "error": None}}, open(out, "w"))
'''


def test_gpu_flow_with_fake_gpu_and_fake_ncu(isolated_cache, twe, tmp_path, monkeypatch):
    import torch

    import smemkit.hw.environment as environment

    size = 256
    problem = twe.Problem(size, size, size)
    _advice, found = twe.advisor_check(regs=64)
    values = {}
    for v in found:
        launch = twe.predict(v.pattern, problem)["per_launch"]
        values[v.kernel] = {
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": f"{launch['load_wavefronts']:,}",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "0",
            "smsp__inst_executed_op_shared_ld.sum": launch["load_instructions"],
            "smsp__inst_executed_op_shared_st.sum": "0",
            "smsp__sass_inst_executed_op_ldgsts.sum": launch["store_instructions"],
            "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum": launch["store_wavefronts"]}
    values_path = tmp_path / "values.json"
    values_path.write_text(json.dumps(values))
    listed = ["smsp__sass_inst_executed_op_ldgsts",
              "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts"]
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, listed=listed, values_path=str(values_path)))
    fake.chmod(0o755)

    def fake_gpu(variants, problem, args):
        out = {v.name: {"ms": {"unpadded": 4.0}.get(v.name, 2.0), "gflops": 1.0, "rel_err": 1e-7,
                        "correct": True, "p20_ms": 1.0, "p80_ms": 1.0, "samples": args.reps,
                        "max_abs_err_over_max_ref": 1e-7, "driver_blocks_per_sm": 9} for v in variants}
        out["torch_fp32_matmul"] = {"ms": 1.0, "gflops": 1.0, "note": "fake"}
        return out

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(twe, "gpu_measure", fake_gpu)
    monkeypatch.setattr(environment, "device_block", lambda: {"gpu": "fake"})
    out = tmp_path / "twe.json"
    assert twe.main(["--ncu", "--ncu-path", str(fake), "--out", str(out), "--size", str(size),
                     "--keep", str(tmp_path / "raw")]) == 0
    data = json.loads(out.read_text())
    assert data["dry_run"] is False and data["ncu"]["driver"] == {"launched": list(values), "error": None}
    assert len(data["ncu"]["attempts"]) == 1 and "error" not in data["ncu"]
    left_out = data["ncu"]["metrics_not_listed_by_ncu"]
    assert "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum" in left_out
    for r in data["variants"]:
        assert r["load_match"] is True and r["store_counter"] == "ldgsts" and r["store_match"] is True
        assert r["measured_ldgsts_instructions"] == r["predicted_store_instructions"]
        assert r["load_wavefronts_saved_vs_unpadded"]["match"] is True
        assert r["ms"] is not None and r["correct"] is True
    assert data["variants"][2]["speedup_vs_unpadded"] == 2.0
    assert (tmp_path / "raw" / "spec.json").exists()
