"""``smemkit offload plan`` (registered on a private parser: main.py wires it in separately)."""

import argparse
import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.offload import cli


def invoke(argv):
    parser = argparse.ArgumentParser(prog="smemkit")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.run(args)


def test_plan_prints_ratios_and_three_times(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # rich wraps at 80 columns when not on a terminal
    assert invoke(["offload", "plan", "--model", "llama-3-70b", "--batch", "8", "--seq", "2048",
                   "--gpu-mem", "80", "--profile", "h200"]) == 0
    out = capsys.readouterr().out
    for word in ("qkv_proj", "attention", "down_proj", "lm_head", "greedy", "uniform", "oracle",
                 "must offload", "790.0 TFLOP/s"):
        assert word in out, word


def test_plan_json_is_consistent(capsys):
    assert invoke(["offload", "plan", "--model", "opt-30b", "--batch", "512", "--seq", "128",
                   "--gpu-mem", "139", "--profile", "h100", "--tflops", "800", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    plans = out["plans"]
    assert out["hardware"]["flops_per_s"] == 800e12 and out["hardware"]["sources"]["F"] == "--tflops"
    assert plans["greedy"]["time_s"] < plans["uniform"]["time_s"]  # 0.8 GiB fits under the plateaus
    assert plans["greedy"]["time_s"] == pytest.approx(plans["oracle"]["time_s"], rel=1e-9)
    assert plans["greedy"]["offloaded_bytes"] >= out["required_offload_bytes"] * (1 - 1e-12)
    assert {k["kind"] for k in plans["greedy"]["by_kind"]} >= {"fc1", "fc2", "attention"}


def test_plan_of_a_moe_model_reads_a_share_of_its_experts(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert invoke(["offload", "plan", "--model", "mixtral-8x7b", "--batch", "1", "--seq", "1024",
                   "--gpu-mem", "40", "--profile", "h200", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    kinds = {k["kind"]: k for k in plans["greedy"]["by_kind"]}
    assert "experts" in kinds and "gate_proj" not in kinds
    # a step of one token reads 2 of 8 experts: host-bound bytes go to the experts first
    assert kinds["experts"]["ratio"] > kinds["qkv_proj"]["ratio"]
    assert plans["greedy"]["time_s"] < plans["uniform"]["time_s"]
    assert plans["greedy"]["time_s"] == pytest.approx(plans["oracle"]["time_s"], rel=1e-9)
    assert invoke(["offload", "plan", "--model", "mixtral-8x7b", "--batch", "1", "--seq", "1024",
                   "--gpu-mem", "40", "--profile", "h200"]) == 0
    assert "reads f = 25.0%" in capsys.readouterr().out


def test_plan_from_config_json_and_exact_budget(tmp_path, capsys):
    cfg = {"model_type": "llama", "hidden_size": 1024, "intermediate_size": 4096, "num_attention_heads": 16,
           "num_key_value_heads": 4, "num_hidden_layers": 4, "vocab_size": 32000}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert invoke(["offload", "plan", "--model", str(path), "--batch", "1", "--seq", "64",
                   "--gpu-mem", "0.05", "--profile", "h200", "--exact-budget", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["plans"]["greedy"]["offloaded_bytes"] == pytest.approx(out["required_offload_bytes"])


@pytest.mark.parametrize("extra,word", [
    (["--model", "nope"], "built-in model"),
    (["--model", "opt-30b", "--tflops", "0"], "--tflops"),
    (["--model", "opt-30b", "--gpu-mem", "-1"], "--gpu-mem"),
    (["--model", "opt-30b", "--batch", "0"], "--batch"),
    (["--model", "opt-30b", "--profile", "tpu"], "neither an embedded profile"),
])
def test_bad_arguments_are_invalid_argument_errors(extra, word):
    argv = ["offload", "plan", "--batch", "8", "--seq", "64", "--gpu-mem", "40", "--profile", "h200"]
    argv += extra  # argparse keeps the last value of a repeated option
    with pytest.raises(InvalidArgumentError, match=word):
        invoke(argv)


def test_offload_needs_an_action():
    with pytest.raises(SystemExit):
        invoke(["offload"])


@pytest.mark.parametrize(("shape", "batch", "ratio", "path"), [
    ("4096x14336", 1, 0.05, "kernel"),     # small host part, HBM part short: the kernel
    ("28672x8192", 8, 0.0128, "ring"),     # HBM part long: the kernel's slower HBM stream loses
    ("4096x14336", 64, 0.1, "ring"),       # past 8 rows: the ring
    ("4096x14336", 8, 0.0, "cublas"),      # nothing offloaded
])
def test_path_names_the_rule_choice_and_its_times(capsys, monkeypatch, shape, batch, ratio, path):
    from smemkit.hw.profile import builtin_profiles
    from smemkit.offload.costmodel import hardware_from_profile
    from smemkit.offload.split_rule import host_rows_for_ratio, path_times

    monkeypatch.setenv("COLUMNS", "200")
    assert invoke(["offload", "path", "--shape", shape, "--batch", str(batch), "--ratio", str(ratio),
                   "--profile", "h200"]) == 0
    out = capsys.readouterr().out
    assert f"path: {path}" in out
    if path != "cublas":
        n, k = (int(v) for v in shape.split("x"))
        h = host_rows_for_ratio(n, ratio)
        hw = hardware_from_profile(builtin_profiles()["h200_sxm"])
        times = path_times((n - h) * k * 2, h * k * 2, hw.hbm_bytes_per_s, hw.host_bytes_per_s)
        assert f"ring    {times['ring'] * 1e3:8.3f} ms" in out
        assert ("kernel  " in out) is (batch <= 8)


def test_path_agrees_with_split_linear_on_rows_too_wide_for_the_ring(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert invoke(["offload", "path", "--shape", "4096x600000", "--batch", "16", "--ratio", "0.5",
                   "--profile", "h200"]) == 0
    assert "path: kernel (K = 600000: a ring slot cannot hold 16 weight rows)" in capsys.readouterr().out


def test_path_bad_shape_is_a_clear_error():
    with pytest.raises(InvalidArgumentError, match="expected N_outxK"):
        invoke(["offload", "path", "--shape", "4096y", "--batch", "1", "--ratio", "0.1"])
