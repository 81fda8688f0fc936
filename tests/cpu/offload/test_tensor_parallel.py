"""Tensor-parallel planning without a GPU: the shard each GPU holds, its plan, the collectives."""

from __future__ import annotations

import argparse
import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import select_profile
from smemkit.offload import (
    BUILTIN_MODELS,
    cli,
    decode_ops,
    greedy_plan,
    hardware_from_profile,
    required_offload_bytes,
)
from smemkit.offload.tensor_parallel import TP_LINK, collective_s, plan_tensor_parallel, shard_config

HW = hardware_from_profile(select_profile("h200_sxm")[0])
GIB = 2**30


def total(cfg, batch=8, seq=4096) -> float:
    return sum(op.weight_bytes for op in decode_ops(cfg, batch, seq))


def test_one_gpu_is_the_single_gpu_plan():
    cfg = BUILTIN_MODELS["llama-3-70b"]
    tp = plan_tensor_parallel(cfg, 1, HW, batch=8, seq=4096, gpu_mem_bytes_per_gpu=100 * GIB)
    ops = decode_ops(cfg, 8, 4096)
    single = greedy_plan(ops, HW, required_offload_bytes(ops, 100 * GIB))
    assert tp.shard is cfg and tp.collective_s == 0.0
    assert tp.plan.ratios == single.ratios and tp.time_s == single.time_s


@pytest.mark.parametrize("g", [2, 4, 8])
def test_shards_split_the_bytes_and_kv_heads_are_replicated_past_their_count(g):
    cfg = BUILTIN_MODELS["llama-3-70b"]  # 64 query heads, 8 KV heads
    shard = shard_config(cfg, g)
    assert (shard.num_attention_heads, shard.num_key_value_heads) == (64 // g, 8 // g)
    assert shard.intermediate_size * g == cfg.intermediate_size
    assert total(shard) * g == pytest.approx(total(cfg), rel=1e-6)  # 128256 divides by 2, 4, 8
    wide = shard_config(cfg, 16)  # 16 GPUs, 8 KV heads: each KV head on two GPUs
    assert wide.num_key_value_heads == 1
    kv = sum(op.weight_bytes for op in decode_ops(wide, 8, 4096) if op.kind == "attention")
    kv_one = sum(op.weight_bytes for op in decode_ops(cfg, 8, 4096) if op.kind == "attention")
    assert kv * 16 == 2 * kv_one


def test_each_gpu_streams_its_share_over_its_own_link():
    """The same total HBM split over G GPUs: each moves 1/G of the host bytes over its own link,
    so the planned step falls about G-fold; the collectives are what G adds."""
    cfg = BUILTIN_MODELS["llama-3-70b"]
    one = plan_tensor_parallel(cfg, 1, HW, batch=8, seq=4096, gpu_mem_bytes_per_gpu=100 * GIB)
    for g in (2, 4, 8):
        many = plan_tensor_parallel(cfg, g, HW, batch=8, seq=4096, gpu_mem_bytes_per_gpu=100 * GIB / g)
        assert many.total_host_bytes == pytest.approx(one.host_bytes_per_gpu, rel=1e-3)
        assert many.plan.time_s == pytest.approx(one.plan.time_s / g, rel=1e-2)
        assert 0 < many.collective_s == collective_s(cfg, g, 8)
        assert many.time_s == many.plan.time_s + many.collective_s


def test_collectives_follow_the_ring_model():
    cfg = BUILTIN_MODELS["llama-3-8b"]
    link = {"bytes_per_s": 1e11, "latency_s": 0.0, "source": "test"}
    act = 8 * 4096 * 2
    logits = 8 * 128256 * 4
    want = 2 * 32 * (2 * 3 / 4 * act / 1e11) + 3 / 4 * logits / 1e11
    assert collective_s(cfg, 4, 8, link) == pytest.approx(want)
    assert collective_s(cfg, 1, 8) == 0.0
    assert "not measured" in TP_LINK["source"]


@pytest.mark.parametrize(("g", "match"), [(0, "tp"), (3, "num_attention_heads"), (65, "tp")])
def test_shards_that_cannot_be_made_are_refused(g, match):
    with pytest.raises(InvalidArgumentError, match=match):
        shard_config(BUILTIN_MODELS["llama-3-70b"], g)


def test_kv_heads_that_neither_divide_nor_are_divided_are_refused():
    from dataclasses import replace

    odd = replace(BUILTIN_MODELS["llama-3-8b"], num_attention_heads=48, num_key_value_heads=6)
    with pytest.raises(InvalidArgumentError, match="num_key_value_heads"):
        shard_config(odd, 4)


def test_plan_cli_plans_one_shard_per_gpu(capsys):
    parser = argparse.ArgumentParser(prog="smemkit")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["offload", "plan", "--model", "llama-3-70b", "--batch", "8", "--seq", "4096",
                              "--gpu-mem", "30", "--profile", "h200", "--tp", "4", "--json"])
    assert args.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tp"] == 4
    assert out["collective_s"] == pytest.approx(collective_s(BUILTIN_MODELS["llama-3-70b"], 4, 8))
    shard = plan_tensor_parallel(BUILTIN_MODELS["llama-3-70b"], 4, HW, batch=8, seq=4096,
                                 gpu_mem_bytes_per_gpu=30 * GIB)
    assert out["plans"]["greedy"]["time_s"] == pytest.approx(shard.plan.time_s, rel=1e-9)
    bad = parser.parse_args(["offload", "plan", "--model", "llama-3-70b", "--batch", "8", "--seq", "4096",
                             "--gpu-mem", "30", "--tp", "3"])
    with pytest.raises(InvalidArgumentError, match="num_attention_heads"):
        bad.run(bad)
