"""The decode engine's eager step, the ``offload run`` / ``plan`` CLI and the e2e benchmark's pure
parts, without a GPU.

The engine's step on the CPU is the step a CUDA graph captures (same static cache, same
``smemkit_static`` attention, same position and mask tensors), so greedy tokens equal to
transformers' own ``generate`` (float32, where the two attentions agree to rounding) check the
cache writes, the mask, the grouped-query SDPA and the host/HBM split of the batch.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from hf_tiny_models import FOUR_ARCHS, tiny_configs  # noqa: E402
from hf_tiny_models import tiny as tiny_model  # noqa: E402

from smemkit.cli.main import main  # noqa: E402
from smemkit.errors import InvalidArgumentError  # noqa: E402
from smemkit.offload import decode_engine, offload_model  # noqa: E402
from smemkit.offload.e2e import check_targets, floors, tpot_stats  # noqa: E402
from smemkit.offload.placement import CpuPlacement  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
VOCAB = 256
CONFIGS = tiny_configs(vocab_size=VOCAB, max_position_embeddings=64, archs=FOUR_ARCHS)
B, L, T = 4, 5, 8


def tiny(arch: str, dtype=torch.float32):
    return tiny_model(arch, dtype=dtype, configs=CONFIGS)


def prompt() -> torch.Tensor:
    return torch.randint(0, VOCAB, (B, L), generator=torch.Generator().manual_seed(1))


def hf_greedy(model, ids):
    return model.generate(
        ids, attention_mask=torch.ones_like(ids), max_new_tokens=T, min_new_tokens=T, do_sample=False
    )


@pytest.mark.parametrize("arch", sorted(CONFIGS))
def test_eager_engine_matches_transformers_generate(arch):
    model = tiny(arch)
    ids = prompt()
    want = hf_greedy(model, ids)
    engine = decode_engine(model, batch=B, max_seq_len=L + T)
    assert torch.equal(engine.generate(ids, T, graph=False), want)
    assert torch.equal(hf_greedy(model, ids), want)  # the model still generates with its own caches
    with pytest.raises(Exception, match="CUDA graphs need a CUDA device"):
        engine.generate(ids, T, graph=True)


@pytest.mark.parametrize("arch", ["llama", "opt"])
def test_offloaded_engine_splits_the_batch_and_matches(arch):
    model = tiny(arch, torch.bfloat16)
    ids = prompt()
    plain = decode_engine(copy.deepcopy(model), batch=B, max_seq_len=L + T).generate(ids, T, graph=False)
    off = offload_model(
        model, ratio=0.5, batch=B, max_seq_len=L + T, placement=CpuPlacement(), profile="h200"
    )
    assert off.kv_cache.host_seqs == [2, 2]
    got, logits = off.engine().generate(ids, T, graph=False, keep_logits=True)
    assert torch.equal(got, plain) and len(logits) == T
    assert torch.equal(off.generate(ids, max_new_tokens=T, graph=False), plain)  # the kept engine again


def test_weights_only_keeps_the_kv_cache_in_hbm():
    off = offload_model(
        tiny("llama", torch.bfloat16),
        ratio=0.5,
        batch=B,
        max_seq_len=L + T,
        placement=CpuPlacement(),
        profile="h200",
        offload_kv=False,
    )
    assert off.kv_cache.host_seqs == [0, 0] and off.layout.weight_host_bytes > 0
    assert all(
        r == 0 for op, r in zip(off.layout.ops, off.plan.ratios, strict=True) if op.kind == "attention"
    )


def test_engine_argument_errors():
    model = tiny("llama")
    with pytest.raises(InvalidArgumentError, match="batch must be a positive integer"):
        decode_engine(model, batch=0, max_seq_len=8)
    engine = decode_engine(model, batch=B, max_seq_len=8)
    with pytest.raises(InvalidArgumentError, match="cached positions"):
        engine.generate(prompt(), 9, graph=False)
    with pytest.raises(InvalidArgumentError, match="input_ids must be"):
        engine.prefill(torch.zeros(B + 1, 3, dtype=torch.long))


# ---- CLI ------------------------------------------------------------------------------------------
def test_plan_takes_a_config_json_and_a_checkpoint_dir(tmp_path, capsys):
    model = tiny("llama", torch.bfloat16)
    ckpt = tmp_path / "ckpt"
    model.save_pretrained(ckpt, safe_serialization=True)
    outs = []
    for source in (str(ckpt / "config.json"), str(ckpt), "llama-3-8b"):
        assert (
            main(
                [
                    "offload",
                    "plan",
                    "--model",
                    source,
                    "--batch",
                    "2",
                    "--seq",
                    "16",
                    "--gpu-mem",
                    "0.0001",
                    "--profile",
                    "h200",
                    "--json",
                ]
            )
            == 0
        )
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0]["weight_bytes"] == outs[1]["weight_bytes"] > 0
    assert outs[2]["weight_bytes"] > 100 * outs[0]["weight_bytes"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_run_without_gpu_is_one_clear_error(tmp_path, capsys):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIGS["llama"]().to_dict()))
    assert (
        main(
            [
                "offload",
                "run",
                "--model",
                str(cfg),
                "--ratio",
                "0.1",
                "--batch",
                "2",
                "--prompt",
                "4",
                "--gen",
                "4",
            ]
        )
        != 0
    )
    err = capsys.readouterr().err
    assert err.startswith("smemkit: error:") and "no CUDA GPU" in err and "Traceback" not in err


def test_run_argument_errors(capsys):
    base = ["offload", "run", "--model", "llama-3-8b", "--batch", "2", "--prompt", "4"]
    assert main([*base, "--gen", "1", "--ratio", "0.1"]) != 0
    assert "--gen must be at least 2" in capsys.readouterr().err
    assert main([*base, "--gen", "4", "--ratio", "1.5"]) != 0
    assert "--ratio must be in [0, 1]" in capsys.readouterr().err
    assert main([*base, "--gen", "4", "--ratio", "0.1", "--compare", "hbm,flexgen"]) != 0
    assert "unknown flexgen" in capsys.readouterr().err


# ---- the benchmark's pure parts ---------------------------------------------------------------------
def test_floors_and_stats():
    fl = floors(
        hbm_read_bytes=4e12,
        host_bytes=55e9,
        hbm_bytes_per_s=4e12,
        host_bytes_per_s=55e9,
        reference_tpot_s=0.5,
    )
    assert fl.hbm_s == pytest.approx(1.0) and fl.host_s == pytest.approx(1.0)
    assert fl.target_s == pytest.approx(1.12)
    assert floors(hbm_read_bytes=1, host_bytes=0, hbm_bytes_per_s=1, host_bytes_per_s=1).target_s is None
    with pytest.raises(InvalidArgumentError, match="host_bytes_per_s"):
        floors(hbm_read_bytes=1, host_bytes=1, hbm_bytes_per_s=1, host_bytes_per_s=0)
    s = tpot_stats([float(x) for x in range(1, 11)])
    assert s == {"median_ms": 5.5, "p90_ms": 9.0, "steps": 10}


def test_check_targets_counts_passes_and_failures():
    def rec(method, ratio, tpot, **kw):
        return {"case": "c", "method": method, "ratio": ratio, "tpot_ms": tpot, **kw}

    records = [
        rec("hbm_graph", 0.0, 5.0, hbm_floor_ms=4.0),
        rec("smemkit_graph", 0.0, 5.5, target_ms=5.6, tokens_equal=True),
        rec("smemkit_graph", 0.1, 40.0, target_ms=30.0, tokens_equal=False),
        rec("accelerate", 0.1, 450.0),
        rec("accelerate", 0.025, 1.0),
        rec("smemkit_eager", 0.1, None),
    ]
    s = check_targets(records)
    assert (
        s["tpot_within_1.12x_of_max(hbm, link)"]["passed"],
        s["tpot_within_1.12x_of_max(hbm, link)"]["failed"],
    ) == (1, 1)
    assert s["5x_faster_than_accelerate_at_r>=5%"]["checks"][0]["speedup"] == pytest.approx(11.25)
    assert s["5x_faster_than_accelerate_at_r>=5%"]["met"]
    assert s["hbm_engine_within_1.5x_of_hbm_floor"]["met"]
    assert not s["greedy_tokens_identical_32_steps"]["met"]
    assert not check_targets([])["hbm_engine_within_1.5x_of_hbm_floor"]["met"]  # no checks: not met


def _bench():
    spec = importlib.util.spec_from_file_location("offload_e2e", ROOT / "benchmarks" / "offload_e2e.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_sweep_and_help():
    bench = _bench()
    assert bench.ratios_with_r_star((0.0, 0.1), 0.0113) == [0.0, 0.0113, 0.1]
    assert bench.ratios_with_r_star((0.0, 0.1), 0.1) == [0.0, 0.1]
    assert bench.ratios_with_r_star((0.0, 0.1), None) == [0.0, 0.1]
    rec = bench.make_record(
        "smemkit_graph",
        0.1,
        {"median_ms": 2.0, "p90_ms": 3.0, "steps": 20},
        weight_bytes=8,
        kv_bytes=8,
        host_bytes=4,
        rates={"hbm_bytes_per_s": 8e3, "host_bytes_per_s": 4e3},
        reference_ms=0.5,
        predicted_ms=1.0,
    )
    assert rec["hbm_floor_ms"] == pytest.approx(2.0) and rec["host_floor_ms"] == pytest.approx(1.0)
    assert rec["target_ms"] == pytest.approx(1.12)
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "offload_e2e.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--quick" in out and "--out" in out
    assert "--case" in out and "--model" in out and "--ratios" in out
    assert rec["case"] == bench.CASE
    assert bench.make_record("smemkit_graph", 0.1, None, weight_bytes=8, kv_bytes=8, host_bytes=4,
                             rates={"hbm_bytes_per_s": 8e3, "host_bytes_per_s": 4e3}, reference_ms=None,
                             predicted_ms=None, case="qwen3-8b_b8_ctx1k")["case"] == "qwen3-8b_b8_ctx1k"
    qwen3 = bench.model_config("qwen3-8b")
    assert qwen3.model_type == "qwen3" and qwen3.num_key_value_heads == 8
