"""Planning a decoder split across G GPUs by Megatron-style tensor parallelism, one shard per GPU.

Each GPU holds a shard: q/k/v and gate/up column-parallel (its heads, its share of the MLP's
columns), o and down row-parallel (the matching rows), its KV heads' cache, its share of the LM
head's vocabulary. Every GPU has its own host link, so each shard is planned by the single-GPU
planner against its own GPU's HBM budget and link: the shards are alike, so the step takes one
shard's planned time plus the collectives (two all-reduces of B x hidden per layer, one
all-gather of the logits). The collective cost is a ring model over NVLink whose rates are
assumptions (``TP_LINK``), not measurements: no multi-GPU machine was available to measure them.

KV heads: with ``num_key_value_heads`` a multiple of G each shard holds its own; with G a
multiple of ``num_key_value_heads`` each KV head is replicated on G / kv GPUs (as Megatron does),
so the cache costs more in total than on one GPU. MoE experts are split the same way inside
every expert (each shard holds all E experts' slices of the intermediate size).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from smemkit.errors import InvalidArgumentError, check_int_range
from smemkit.offload.costmodel import Hardware
from smemkit.offload.models import ModelConfig, decode_ops
from smemkit.offload.planner import Plan, greedy_plan, required_offload_bytes, uniform_plan

MAX_TP = 64
# Assumed NVLink figures for the collective model (H100/H200 SXM datasheets: NVLink 4, 900 GB/s
# per GPU both directions, 450 GB/s each way; the latency a typical NCCL small all-reduce takes):
# not measured here.
TP_LINK = {"bytes_per_s": 450e9, "latency_s": 10e-6,
           "source": "assumed: NVLink 4 at 450 GB/s per direction per GPU, 10 us per collective; "
                     "not measured"}


def shard_config(cfg: ModelConfig, tp: int) -> ModelConfig:
    """The ``ModelConfig`` one of ``tp`` GPUs holds (see the module docstring for the split)."""
    check_int_range("tp", tp, 1, MAX_TP)
    if tp == 1:
        return cfg
    for label, value in (("num_attention_heads", cfg.num_attention_heads),
                         ("intermediate_size", cfg.intermediate_size)):
        if value % tp:
            raise InvalidArgumentError(f"tp = {tp} must divide {label} = {value}")
    kv = cfg.num_key_value_heads
    if kv % tp and tp % kv:
        raise InvalidArgumentError(f"tp = {tp} and num_key_value_heads = {kv}: one must divide the other "
                                   "(KV heads are split, or replicated on tp / kv GPUs each)")
    return replace(cfg, name=f"{cfg.name} (1 of {tp} tensor-parallel shards)",
                   num_attention_heads=cfg.num_attention_heads // tp, num_key_value_heads=max(1, kv // tp),
                   intermediate_size=cfg.intermediate_size // tp, vocab_size=math.ceil(cfg.vocab_size / tp))


def collective_s(cfg: ModelConfig, tp: int, batch: int, link: dict | None = None) -> float:
    """Seconds of one decode step's collectives for the whole model ``cfg`` (not a shard) under the
    ring model: per layer two all-reduces of ``batch x hidden`` activations (after o and down),
    then one all-gather of the logits."""
    if tp == 1:
        return 0.0
    link = link or TP_LINK
    act = batch * cfg.hidden_size * cfg.dtype_bytes
    all_reduce = link["latency_s"] + 2 * (tp - 1) / tp * act / link["bytes_per_s"]
    logits = batch * math.ceil(cfg.vocab_size / tp) * tp * 4  # float32 logits
    all_gather = link["latency_s"] + (tp - 1) / tp * logits / link["bytes_per_s"]
    return 2 * cfg.num_hidden_layers * all_reduce + all_gather


@dataclass(frozen=True)
class TensorParallelPlan:
    """One shard's plan (every GPU's: the shards are alike) and the step it predicts."""

    tp: int
    shard: ModelConfig
    plan: Plan
    gpu_budget_bytes: float
    shard_bytes: float
    collective_s: float

    @property
    def time_s(self) -> float:
        return self.plan.time_s + self.collective_s

    @property
    def host_bytes_per_gpu(self) -> float:
        return self.plan.offloaded_bytes

    @property
    def total_host_bytes(self) -> float:
        return self.tp * self.plan.offloaded_bytes


def plan_tensor_parallel(cfg: ModelConfig, tp: int, hw: Hardware, *, batch: int, seq: int,
                         gpu_mem_bytes_per_gpu: float, method: str = "greedy",
                         link: dict | None = None) -> TensorParallelPlan:
    """Plan ``cfg`` split over ``tp`` GPUs, each with ``gpu_mem_bytes_per_gpu`` of HBM for its
    shard's weights and KV and its own host link (``hw``, the same on every GPU)."""
    if method not in ("greedy", "uniform"):
        raise InvalidArgumentError(f"method must be 'greedy' or 'uniform', got {method!r}")
    shard = shard_config(cfg, tp)
    ops = decode_ops(shard, batch, seq)
    required = required_offload_bytes(ops, gpu_mem_bytes_per_gpu)
    plan = (greedy_plan if method == "greedy" else uniform_plan)(ops, hw, required)
    return TensorParallelPlan(tp, shard, plan, gpu_mem_bytes_per_gpu,
                              math.fsum(op.weight_bytes for op in ops), collective_s(cfg, tp, batch, link))
