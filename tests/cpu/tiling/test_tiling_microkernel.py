"""Microkernels generated from tiling patterns (smemkit.tiling.microkernel) and the dry run of
benchmarks/tiling_validate.py: every suite kernel compiles for sm_90a without spills, the C++
offset code agrees with the analyzer, and the records carry the fields the device run fills."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.runtime.compiler import compile_module
from smemkit.tiling import Access, Pattern, SmemLayout, Swizzle
from smemkit.tiling.examples import BUILTIN
from smemkit.tiling.microkernel import (
    BASELINE_KERNEL,
    expr_to_c,
    generate,
    host_check_source,
    parse_host_check,
    predict,
    suite_source,
)
from smemkit.tiling.validation_suite import strided, suite_kernels, validation_suite

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "tiling_validate.py"
GXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


@pytest.fixture(scope="module")
def suite():
    return suite_kernels()


def _script():
    spec = importlib.util.spec_from_file_location("tiling_validate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suite_covers_the_issue_list(suite):
    assert len(suite) >= 30
    names = [c.name for c, _ in suite]
    assert len(set(names)) == len(names)
    pats = [c.pattern for c, _ in suite]
    widths = {a.width for p in pats for a in p.accesses}
    dtypes = {p.arrays[a.array].dtype for p in pats for a in p.accesses}
    ops = {a.op for p in pats for a in p.accesses}
    assert {16, 32, 64, 128} <= widths and {"fp16", "fp32", "fp64"} <= dtypes and ops == {"load", "store"}
    assert all(f"stride_fp32_ld_w32_s{s}" in names for s in range(1, 34))
    assert any(lay.pad for p in pats for lay in p.arrays.values())
    assert any(isinstance(lay.transform, Swizzle) for p in pats for lay in p.arrays.values())
    families = {c.family for c, _ in suite}
    assert {"builtin", "broadcast", "column_padded", "column_swizzled", "vec64_load",
            "vec128_load"} <= families
    assert all(name in names for name in BUILTIN)


def test_predictions_are_consistent(suite):
    for case, k in suite:
        p = k.prediction
        # every warp has an active lane in every slot, so "executed" and "active" counts agree
        assert p.instructions == p.instructions_all == len(k.slots) * case.pattern.warps, case.name
        assert sum(k.static_ops.values()) == len(k.slots)
        assert p.wavefronts >= p.ideal > 0
        assert k.smem_bytes % 128 == 0 and max(k.address_table) < k.smem_bytes


def test_stride_sweep_prediction_is_gcd():
    for s in range(1, 34):
        p = predict(strided("fp32", 32, s))
        assert p.wavefronts == 2 * math.gcd(s, 32), s  # two warps, gcd(s, 32)-way each


def test_builtin_totals_match_the_docs():
    assert predict(BUILTIN["transpose_32x32_fp32"]()).wavefronts == 1056
    assert predict(BUILTIN["gemm_a_tile"]()).wavefronts == 8256
    assert predict(BUILTIN["cp_async_double_buffer"]()).ideal == 384


def test_every_suite_kernel_compiles_without_spills(isolated_cache, suite):
    kernels = [k for _, k in suite]
    module = compile_module(suite_source(kernels), "tiling_suite_test", arch="sm_90a")
    for k in kernels:
        usage = module.resources[k.name]
        assert not usage.spills and usage.stack_bytes == 0, (k.name, usage)
        assert usage.static_smem_bytes == 0  # dynamic shared memory only
    assert BASELINE_KERNEL in module.resources


def test_single_kernel_source_is_self_contained(isolated_cache):
    k = generate(BUILTIN["cp_async_double_buffer"]())
    module = compile_module(k.source, "one_kernel", arch="sm_90a")
    assert list(module.resources) == [k.name]
    assert k.source.count("smk_ld128(") == k.static_ops["load"] + 1  # + the definition
    assert k.source.count("smk_st128(") == k.static_ops["store"] + 1


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler")
def test_generated_offset_code_matches_the_analyzer(suite, tmp_path):
    kernels = [k for _, k in suite]
    src, exe = tmp_path / "h.cpp", tmp_path / "h"
    src.write_text(host_check_source(kernels))
    subprocess.run([GXX, "-std=c++17", "-O1", "-o", str(exe), str(src)], check=True, timeout=300)
    tables = parse_host_check(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    assert {k.name for k in kernels if k.mode == "expr"} == set(tables)
    for k in kernels:
        if k.mode == "expr":
            assert tables[k.name] == k.address_table, k.name


@pytest.mark.skipif(GXX is None, reason="no host C++ compiler")
def test_expression_translation_keeps_python_semantics(tmp_path):
    exprs = ["(tx - 5) // 4", "(tx - 5) % 4", "-tx // 3", "tx % -3", "tx and ty", "tx or 7",
             "1 < tx <= 3", "tx if tx > 2 else ty * 2", "min(tx, ty, 3)", "max(tx - 4, 0)", "abs(tx - 4)",
             "not tx", "~tx & 7", "(tx << 2) ^ (ty >> 1)"]
    envs = [(x, y) for x in range(8) for y in range(3)]
    lines = ['#include <cstdio>', '#include "pre.h"', "int main() {"]
    for e in exprs:
        (c,) = expr_to_c(e, ["tx", "ty"])
        lines.append(f"  for (int v_tx = 0; v_tx < 8; ++v_tx) for (int v_ty = 0; v_ty < 3; ++v_ty) "
                     f"std::printf(\"%d \", (int)({c}));")
        lines.append('  std::printf("\\n");')
    lines.append("  return 0; }")
    from smemkit.tiling.microkernel import PRELUDE

    (tmp_path / "pre.h").write_text(PRELUDE)
    (tmp_path / "e.cpp").write_text("\n".join(lines))
    subprocess.run([GXX, "-std=c++17", "-o", str(tmp_path / "e"), str(tmp_path / "e.cpp")], check=True)
    run = subprocess.run([str(tmp_path / "e")], capture_output=True, text=True, check=True)
    out = run.stdout.splitlines()
    from smemkit.tiling import expr

    for e, line in zip(exprs, out, strict=True):
        want = [int(expr.evaluate(e, {"tx": x, "ty": y})) for x, y in envs]
        assert [int(v) for v in line.split()] == want, e


def test_callable_index_uses_table_mode(isolated_cache):
    p = Pattern("callable_idx", (64, 1, 1), {"a": SmemLayout((2048,), "fp32", transform=lambda o: o ^ 1)},
                (Access("a", lambda env: 3 * env["tid"], 32, "load"),))
    k = generate(p)
    assert k.mode == "table" and "table[" in k.body
    assert k.address_table[:3] == (4, 8, 28)  # offsets 0, 3, 6 -> ^1 -> 1, 2, 7 words
    with pytest.raises(InvalidArgumentError):
        generate(p, mode="expr")
    module = compile_module(k.source, "table_mode", arch="sm_90a")
    assert not module.resources[k.name].spills


def test_parse_ncu_csv_raw_and_details_pages():
    tv = _script()
    raw = "\n".join([
        "==PROF== Connected to process 1",
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum","smsp__inst_executed_op_shared_ld.sum"',
        '"","","","","","","","","inst"',
        '"0","1","python3","h","smk_tiling_a","1","7","1,056","64"',
        '"1","1","python3","h","smk_tiling_b(unsigned int *, int *, const int *)","1","7","2","n/a"',
        '"2","1","python3","h","smk_tiling_a","1","7","9","9"',
    ])
    got = tv.parse_ncu_csv(raw)
    assert got["smk_tiling_a"]["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] == 1056
    assert got["smk_tiling_b"]["smsp__inst_executed_op_shared_ld.sum"] is None
    details = "\n".join([
        '"ID","Kernel Name","Block Size","Grid Size","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"',
        '"0","smk_tiling_a","(32, 8, 1)","(1, 1, 1)","Command line profiler metrics",'
        '"smsp__inst_executed_op_shared_st.sum","inst","32"',
    ])
    assert tv.parse_ncu_csv(details) == {"smk_tiling_a": {"smsp__inst_executed_op_shared_st.sum": 32}}
    assert tv.parse_ncu_csv("==ERROR== nothing") == {}


def test_parse_sass_counts_lds_sts_only():
    tv = _script()
    text = """
        Function : smk_tiling_x
        /*0100*/  @!P0 LDS R3, [R3+UR4] ;
        /*0110*/  LDS.64 R4, [R2] ;
        /*0120*/  LDSM.16.M88.4 R8, [R2] ;
        /*0130*/  STS.128 [R2], R4 ;
        Function : smk_tiling_y
        /*0100*/  STS.U16 [R2], R4 ;
    """
    assert tv.parse_sass(text) == {"smk_tiling_x": {"LDS": 2, "STS": 1}, "smk_tiling_y": {"LDS": 0, "STS": 1}}


def test_dry_run_writes_complete_records(isolated_cache, tmp_path):
    out = tmp_path / "tiling.json"
    assert _script().main(["--dry-run", "--out", str(out), "--occupancy-configs", "50"]) == 0
    data = json.loads(out.read_text())
    assert data["dry_run"] is True and "software" in data["device"]
    assert "benchmarks/tiling_validate.py --dry-run" in data["provenance"]["command"]
    assert data["provenance"]["software"] == data["device"]["software"]
    assert len(data["patterns"]) == len(validation_suite()) >= 30
    for rec in data["patterns"]:
        for key in ("pattern", "predicted_wavefronts", "measured_wavefronts", "instructions",
                    "measured_instructions", "match", "predicted", "registers", "spills"):
            assert key in rec, key
        assert rec["measured_wavefronts"] is None and rec["spills"] is False
        if GXX:
            assert rec["host_address_check"] is True, rec["pattern"]
    assert len(data["occupancy"]) == 50
    for rec in data["occupancy"]:
        assert rec["registers"] > 0 and rec["predicted_blocks_per_sm"] >= 0 and rec["match"] is None
    assert {r["cluster"] for r in data["clusters"]} == {1, 2, 4, 8, 16}
    assert data["summary"]["patterns"] == len(data["patterns"])
