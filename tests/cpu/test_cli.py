import subprocess
import sys

import pytest
import torch

from smemkit.cli.main import main


def test_info_shows_profiles_and_which_applies(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "h100_sxm" in out and "rtx5090" in out and "profile" in out
    assert "851" in out  # the H100 barrier from Table II


def test_info_with_explicit_profile(capsys):
    assert main(["info", "--profile", "rtx5090"]) == 0
    assert "rtx5090: embedded profile 'rtx5090' (asked for)" in capsys.readouterr().out


def test_cache_info_and_clear(isolated_cache, capsys):
    assert main(["cache", "info"]) == 0
    assert str(isolated_cache) in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 0" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_probe_without_gpu_is_a_clear_error(capsys):
    assert main(["probe"]) == 2
    assert "no CUDA GPU is visible" in capsys.readouterr().err


def test_python_dash_m_entry_point():
    done = subprocess.run([sys.executable, "-m", "smemkit", "cache", "info"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "entries" in done.stdout


def test_advise_on_the_paper_h100_without_gpu(capsys):
    assert main(["advise", "layernorm_bwd", "--rows", "2048", "--width", "65536",
                 "--profile", "h100"]) == 0
    out = capsys.readouterr().out
    assert "T_save" in out and "verdict: use the cluster kernel" in out
    assert "measured: CREDIT repository" in out and "crossover" in out
    assert "non-cluster baseline: T_B = " in out and "(reread)" in out
    assert "T_B's kernel re-reads HBM: T_save = T_B x b_reread / b_B (Eq. 7)" in out


def test_advise_names_the_h200_baseline_kernel(capsys):
    from smemkit.reduction.tables import h200_smemkit

    point = next(p for p in h200_smemkit() if (p.workload, p.shape.N) == ("softmax_bwd", 16384))
    assert main(["advise", "softmax_bwd", "--rows", str(point.shape.M), "--width", "16384",
                 "--profile", "h200"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"T_B = {point.measured.baseline_ms:.4f} ms ({point.measured.baseline_variant}, " in out


def test_advise_says_which_t_save_rule_applies(capsys):
    """layernorm_bwd 8K on the H200 table: T_B's regs_v4_t512 kernel at two 512-thread CTAs per
    SM is four 256-thread units, above the stall limit: T_save = 0, keep the non-cluster kernel."""
    assert main(["advise", "layernorm_bwd", "--rows", "2048", "--width", "8192", "--profile", "h200"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "(regs_v4_t512, 2.00 CTAs per SM at once)" in out
    assert "reads once at 4.00 CTAs of 256 threads per SM (above 3): T_save = 0" in out
    assert "verdict: keep the non-cluster kernel" in out


def test_advise_says_when_dispatch_runs_the_triton_kernel(capsys):
    from smemkit.hw.profile import builtin_profiles
    from smemkit.reduction.cost_model import dispatch_choice, evaluate
    from smemkit.reduction.tables import h200_smemkit

    profile = builtin_profiles()["h200_sxm"]
    seen = set()
    for point in h200_smemkit():
        if point.measured.triton_ms is None or point.shape.N > 8192:
            continue
        kind, _ = dispatch_choice(evaluate(point.shape, profile, point.measured), point.measured)
        assert main(["advise", point.workload, "--rows", str(point.shape.M), "--width",
                     str(point.shape.N), "--profile", "h200"]) == 0
        out = " ".join(capsys.readouterr().out.split())
        assert f"Triton kernel timed {point.measured.triton_ms:.4f} ms" in out
        runs = "the Triton kernel instead" if kind == "triton" else "the model's pick"
        assert f"dispatch runs {runs}" in out
        seen.add(kind == "triton")
    assert seen == {True, False}  # the table has points of both kinds


def test_advise_user_spec_file_is_estimated(capsys):
    assert main(["advise", "examples/rmsnorm_bwd.py", "--rows", "64", "--width", "1024",
                 "--profile", "h200"]) == 0
    assert "estimated from profile 'h200_sxm'" in capsys.readouterr().out


def test_advise_bad_workload_is_a_clear_error(capsys):
    assert main(["advise", "nope", "--rows", "1", "--width", "1"]) == 2
    assert "neither a built-in" in capsys.readouterr().err


def test_bench_reduction_plan_covers_every_figure(capsys, tmp_path):
    assert main(["bench", "reduction", "--out", str(tmp_path), "--print-commands"]) == 0
    out = capsys.readouterr().out
    for script in ("probe", "reduction.py", "credit_eval.py", "dram_bytes.py", "report_credit.py"):
        assert script in out
    assert main(["bench", "reduction", "--quick", "--skip", "probe", "dram-bytes", "--print-commands"]) == 0
    quick = capsys.readouterr().out
    assert "--widths 16384 65536" in quick and "dram_bytes.py" not in quick and "smemkit probe" not in quick


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_bench_reduction_without_gpu_is_a_clear_error(capsys, tmp_path):
    assert main(["bench", "reduction", "--out", str(tmp_path)]) == 2
    assert "GPU" in capsys.readouterr().err


def test_bench_reduction_needs_a_checkout(monkeypatch, tmp_path, capsys):
    import smemkit

    monkeypatch.setattr(smemkit, "__file__", str(tmp_path / "a" / "b" / "smemkit" / "__init__.py"))
    assert main(["bench", "reduction", "--print-commands"]) == 2
    assert "source checkout" in capsys.readouterr().err


def test_bench_reduction_checks_inputs_of_skipped_steps(monkeypatch, tmp_path, capsys):
    from smemkit.runtime import device

    monkeypatch.setattr(device, "require_gpu", lambda: 0)
    assert main(["bench", "reduction", "--out", str(tmp_path), "--skip", "reduction"]) == 2
    assert "credit-eval needs reduction.json" in capsys.readouterr().err
