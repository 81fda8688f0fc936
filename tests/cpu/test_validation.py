"""Bad input gets one ``smemkit: error:`` line naming the argument or field (rc 2), never a
traceback or a wrong answer: the cases a user test found (issue 31), one test each."""

import csv
import io
import json
import re
from pathlib import Path

import pytest

from smemkit.cli.main import main
from smemkit.hw.profile import builtin_profiles
from smemkit.offload.cli import relative_text
from smemkit.offload.models import config_from_hf, load_model

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "tests" / "data" / "atomics_hist_ncu.csv"


def run(capsys, argv):
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smemkit: error: "), err
    return lines[0]


# ---- Nsight Compute reports ------------------------------------------------------------------

def report_rows() -> list[list[str]]:
    return list(csv.reader(io.StringIO(REPORT.read_text())))


def write_rows(path: Path, rows) -> Path:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(out.getvalue())
    return path


def test_truncated_report_is_an_error_not_no_shared_atomics(tmp_path, capsys):
    text = REPORT.read_text()
    cut = tmp_path / "cut.csv"
    cut.write_text(text[: text.index('"hist_add"') + 200])  # inside the second launch's row
    rc, out, err = run(capsys, ["atomics", "analyze", cut])
    assert rc == 2 and "no shared atomics" not in out
    assert "truncated or damaged" in one_error_line(err) or "damaged at line" in err


def test_text_in_a_counter_is_an_error_naming_the_metric(tmp_path, capsys):
    rows = report_rows()
    rows[3][rows[0].index("smsp__inst_executed_op_shared_atom.sum")] = "lots"
    rc, _, err = run(capsys, ["atomics", "analyze", write_rows(tmp_path / "t.csv", rows)])
    assert rc == 2 and "smsp__inst_executed_op_shared_atom.sum" in one_error_line(err) and "'lots'" in err


def test_zeroed_instructions_do_not_read_as_no_shared_atomics(tmp_path, capsys):
    rows = report_rows()
    for name in ("smsp__inst_executed_op_shared_atom.sum", "smsp__inst_executed_op_shared_atom_dot_alu.sum"):
        rows[2][rows[0].index(name)] = "0"
    rc, out, err = run(capsys, ["atomics", "analyze", write_rows(tmp_path / "z.csv", rows)])
    assert rc == 2 and "inconsistent" in one_error_line(err) and "wavefronts" in err


@pytest.mark.parametrize("metric", ["sm__cycles_active.sum",
                                    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_atom.sum"])
def test_a_scaled_counter_is_called_inconsistent(tmp_path, capsys, metric):
    """Cycles / 10 made U 2.4 on hist_inc and flipped its verdict; wavefronts x 3 likewise."""
    rows = report_rows()
    i = rows[0].index(metric)
    value = float(rows[2][i].replace(",", ""))
    rows[2][i] = repr(value / 10 if metric.startswith("sm__") else value * 3)
    rc, _, err = run(capsys, ["atomics", "analyze", write_rows(tmp_path / "s.csv", rows), "--per-launch"])
    assert rc == 2 and "inconsistent at launch 0" in one_error_line(err)


def test_a_dropped_metric_the_verdict_needs_is_named(tmp_path, capsys):
    rows = report_rows()
    metric = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
    i = rows[0].index(metric)
    dropped = write_rows(tmp_path / "d.csv", [r[:i] + r[i + 1:] for r in rows])
    rc, _, err = run(capsys, ["atomics", "analyze", dropped])
    assert rc == 2 and f"lacks metric(s) {metric}" in one_error_line(err)


def test_the_valid_report_still_analyzes(capsys):
    rc, out, _ = run(capsys, ["atomics", "analyze", REPORT, "--json"])
    kernels = json.loads(out)["kernels"]
    assert rc == 0 and all(k["u_atom"]["median"] <= 1.0 for k in kernels)


# ---- device profiles -------------------------------------------------------------------------

def profile_file(tmp_path: Path, **changes) -> Path:
    data = builtin_profiles()["h200_sxm"].to_dict()
    for key, value in changes.items():
        if value is KeyError:
            del data[key]
        else:
            data[key] = value
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(("changes", "words"), [
    ({"sm_count": "132"}, "field 'sm_count' must be an integer in [1, 100000], got '132'"),
    ({"sm_count": -4}, "field 'sm_count'"),
    ({"hbm_tbps": [4.8]}, "field 'hbm_tbps' must be a number"),
    ({"dsmem": KeyError}, "lacks field(s) 'dsmem'; it needs"),
    ({"compute_capability": "9.0"}, "field 'compute_capability' must be [major, minor]"),
    ({"smem_per_block_bytes": 10**6}, "exceeds smem_per_sm_bytes"),
    ({"sm_clokc_ghz": 1.9}, "unknown field(s) 'sm_clokc_ghz'"),
])
def test_bad_profile_fields_are_named(tmp_path, capsys, changes, words):
    path = profile_file(tmp_path, **changes)
    for argv in (["advise", "layernorm_bwd", "--rows", "64", "--width", "4096", "--profile", path],
                 ["info", "--profile", path], ["offload", "path", "--shape", "64x64", "--batch", "1",
                                               "--ratio", "0.5", "--profile", path]):
        rc, out, err = run(capsys, argv)
        assert rc == 2 and words in one_error_line(err) and "is not a valid smemkit device profile" in err
        assert "verdict" not in out


def test_nested_profile_fields_are_named(tmp_path, capsys):
    data = builtin_profiles()["h200_sxm"].to_dict()
    data["dsmem"]["barrier_cycles"] = {"2": "fast"}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    rc, _, err = run(capsys, ["info", "--profile", path])
    assert rc == 2 and "field 'dsmem.barrier_cycles'[2]" in one_error_line(err)


# ---- model configs ---------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
         "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 32000}


@pytest.mark.parametrize(("field", "value", "dtype", "nbytes"), [
    (None, None, "bfloat16", 2), ("torch_dtype", "float32", "float32", 4),
    ("torch_dtype", "float16", "float16", 2), ("dtype", "bfloat16", "bfloat16", 2),
    ("torch_dtype", "torch.float32", "float32", 4),
])
def test_config_dtype_is_honoured(field, value, dtype, nbytes):
    cfg = config_from_hf({**LLAMA, **({field: value} if field else {})})
    assert (cfg.dtype, cfg.dtype_bytes) == (dtype, nbytes)


def test_float32_config_is_planned_at_four_bytes(tmp_path, capsys):
    sizes = {}
    for dtype in ("bfloat16", "float32"):
        path = tmp_path / f"{dtype}.json"
        path.write_text(json.dumps({**LLAMA, "torch_dtype": dtype}))
        rc, out, _ = run(capsys, ["offload", "plan", "--model", path, "--batch", "1", "--seq", "64",
                                  "--gpu-mem", "0.05", "--profile", "h200", "--json"])
        data = json.loads(out)
        assert rc == 0 and data["dtype"] == dtype
        sizes[dtype] = data["weight_bytes"] + data["kv_bytes"]
    assert sizes["float32"] == 2 * sizes["bfloat16"]


def test_unknown_dtype_is_an_error(tmp_path, capsys):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**LLAMA, "torch_dtype": "int4"}))
    rc, _, err = run(capsys, ["offload", "plan", "--model", path, "--batch", "1", "--seq", "8",
                              "--gpu-mem", "1"])
    assert rc == 2 and "'torch_dtype' 'int4': allowed are float32, float16, bfloat16" in one_error_line(err)
    with pytest.raises(ValueError, match="tie_word_embeddings"):
        config_from_hf({**LLAMA, "tie_word_embeddings": "false"})
    assert load_model("llama-3-8b").dtype == "bfloat16"


# ---- spec and pattern files ------------------------------------------------------------------

@pytest.mark.parametrize(("source", "line", "what"), [
    ("x = 1\ny = 1 / 0\n", 2, "ZeroDivisionError: division by zero"),
    ("def f(:\n", 1, "SyntaxError"),
    ("import not_a_module_anywhere\n", 1, "ModuleNotFoundError"),
    ("from smemkit.reduction import ReductionSpec\nS = ReductionSpec(name='a', inputs=('x', 3), stages=(),"
     " outputs=())\n", 2, "inputs must be a tuple of names"),
])
def test_spec_file_errors_give_file_and_line(tmp_path, capsys, source, line, what):
    path = tmp_path / "myspec.py"
    path.write_text(source)
    rc, _, err = run(capsys, ["advise", path, "--rows", "8", "--width", "1024", "--profile", "h200"])
    assert rc == 2 and f"{path}:{line}: " in one_error_line(err) and what in err
    pattern = tmp_path / "pattern.py"
    pattern.write_text(source)
    rc, _, err = run(capsys, ["tiling", "analyze", pattern])
    assert rc == 2 and f"{pattern}:{line}: " in one_error_line(err)


def test_pattern_function_errors_name_the_access(tmp_path, capsys):
    path = tmp_path / "p.py"
    path.write_text("from smemkit.tiling.layout import SmemLayout\n"
                    "from smemkit.tiling.pattern import Access, Pattern\n"
                    "PATTERN = Pattern('p', (32,), {'a': SmemLayout((32,))},\n"
                    "                  (Access('a', lambda e: 1 // (e['lane'] - 3), label='oops'),))\n")
    rc, _, err = run(capsys, ["tiling", "analyze", path])
    assert rc == 2 and "access oops: the index function raised ZeroDivisionError" in one_error_line(err)


@pytest.mark.parametrize(("change", "words"), [
    ({"regs": "many"}, "regs='many'"), ({"block": [32, True]}, "'block'"),
    ({"arrays": {"a": {"shape": [64], "swizzle": [99, 0, 99]}}}, "swizzle"),
    ({"accesses": [{"array": "a", "index": "tid", "loops": {"i": {"stop": 10**9}}}]}, "at most 4096"),
    ({"accesses": [{"array": "a", "index": "tid", "loops": {"i": [True, 2]}}]}, "list of integers"),
])
def test_pattern_json_fields_are_checked(tmp_path, capsys, change, words):
    data = {"block": [32], "arrays": {"a": {"shape": [64]}}, "accesses": [{"array": "a", "index": "tid"}],
            **change}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    rc, _, err = run(capsys, ["tiling", "analyze", path])
    assert rc == 2 and words in one_error_line(err)


# ---- CLI numbers -----------------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "words"), [
    (["advise", "layernorm_bwd", "--rows", "0", "--width", "4096"], "--rows must be an integer in [1,"),
    (["advise", "layernorm_bwd", "--rows", "8", "--width", str(2**40)], "--width"),
    (["offload", "path", "--shape", "64x64", "--batch", "1", "--ratio", "1.5"],
     "--ratio must be a number in [0, 1]"),
    (["offload", "path", "--shape", "64x64", "--batch", "1", "--ratio", "nan"], "--ratio"),
    (["offload", "path", "--shape", "64x-64", "--batch", "1", "--ratio", "0.5"], "--shape"),
    (["offload", "plan", "--model", "opt-30b", "--batch", "1", "--seq", "8", "--gpu-mem", "inf"],
     "--gpu-mem"),
    (["offload", "plan", "--model", "opt-30b", "--batch", "1", "--seq", "0", "--gpu-mem", "1"], "--seq"),
    (["offload", "plan", "--model", "opt-30b", "--batch", "1", "--seq", "8", "--gpu-mem", "1",
      "--hbm-tbps", "-3"], "--hbm-tbps"),
    (["tiling", "analyze", "gemm_a_tile", "--max-pad", "-1"], "--max-pad"),
    (["tiling", "analyze", "gemm_a_tile", "--regs", "300"], "--regs"),
    (["occupancy", "--threads", "0", "--regs", "32"], "threads=0"),
    (["occupancy", "--threads", "128", "--regs", "32", "--cluster", "64"], "cluster=64"),
])
def test_cli_numbers_are_checked_first(capsys, argv, words):
    rc, out, err = run(capsys, argv)
    assert rc == 2 and out == "" and words in one_error_line(err)


# ---- output --------------------------------------------------------------------------------

def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert re.fullmatch(r"smemkit \d+\.\d+\.\d+\S*\n", capsys.readouterr().out)


@pytest.mark.parametrize("argv", [
    ["advise", "softmax_bwd", "--rows", "4096", "--width", "16384", "--profile", "h200"],
    ["offload", "plan", "--model", "llama-3-8b", "--batch", "4", "--seq", "512", "--gpu-mem", "8"],
    ["offload", "path", "--shape", "4096x14336", "--batch", "16", "--ratio", "0.3"],
    ["tiling", "analyze", "transpose_32x32_fp32"],
    ["occupancy", "--threads", "256", "--regs", "64"],
    ["atomics", "analyze", str(REPORT)],
    ["atomics", "table"],
])
def test_every_analysis_command_has_json(capsys, argv):
    rc, out, _ = run(capsys, [*argv, "--json"])
    assert rc == 0 and isinstance(json.loads(out), dict)


def test_relative_differences_are_rounded():
    assert relative_text(-2.30e-14) == "0 %" and relative_text(4.97e-15) == "0 %"
    assert relative_text(0.01234) == "+1.23 %" and relative_text(-0.5) == "-50 %"


def test_offload_plan_prints_no_outside_path_and_no_float_noise(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    rc, out, _ = run(capsys, ["offload", "plan", "--model", "llama-3-8b", "--batch", "8", "--seq", "4096",
                              "--gpu-mem", "10", "--profile", "h200"])
    assert rc == 0 and ".library" not in out and "KINDS.md" not in out
    assert "greedy vs oracle: 0 %" in out and not re.search(r"\de-\d", out)


def test_tiling_message_cites_the_validation_file(capsys, monkeypatch):
    from smemkit.tiling.cli import VALIDATION

    summary = json.loads((ROOT / "benchmarks/results/h200/tiling.json").read_text())["summary"]
    assert VALIDATION["wavefronts"] == (summary["wavefront_match"]["true"], summary["patterns"])
    assert VALIDATION["occupancy"] == (summary["occupancy_match"]["true"], summary["occupancy_configs"])
    assert VALIDATION["clusters"] == (summary["cluster_match"]["true"], summary["cluster_records"])
    monkeypatch.setenv("COLUMNS", "250")
    rc, out, _ = run(capsys, ["tiling", "analyze", "gemm_b_tile", "--no-advice"])
    assert rc == 0 and "not yet validated" not in out and "SPEC" not in out
    assert "149 of 150 microkernels" in out and "benchmarks/results/h200/tiling.json" in out
