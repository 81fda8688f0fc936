"""DAK-style offloading (SPEC §2): weights and KV caches split between HBM and pinned host memory.

The planner (issue 5): the per-operation cost model, model descriptions, and the greedy / uniform /
oracle offload-ratio planners (pure Python). The host-memory and kernel side: exact-size pinned
allocations (``PinnedBuffer``), weights split by output rows between HBM and pinned host memory
(``SplitWeight``), the split linear (``split_linear``, ``OffloadedLinear``: cuBLAS, the split
GEMV kernel or the copy-engine ring path, by a measured rule), the split decode attention over a
KV cache split by sequences (``SplitKVCache``, ``split_decode_attention``) and the congestion
probe that picks how many
CTAs read host memory with how many bytes in flight
(``run_congestion_probe``, ``choose_window``). The GPU pieces import torch and the CUDA runtime
lazily (``smemkit.offload.X`` imports them on first use), so the planner stays torch-free.
Hugging Face models (the ``hf`` extra): ``offload_model`` / ``load_offloaded`` plan a decoder's own
ops, split its linears and give it a ``BatchSplitCache`` for ``generate``; ``model_config_from_source``
reads a model for the planner from a built-in name, a config.json or a checkpoint directory.
"""

import importlib

from smemkit.offload.costmodel import (
    DEFAULT_TFLOPS,
    Hardware,
    Op,
    TurningPoints,
    hardware_from_profile,
    op_time,
    turning_points,
)
from smemkit.offload.models import BUILTIN_MODELS, ModelConfig, config_from_hf, decode_ops, load_model
from smemkit.offload.planner import (
    Plan,
    by_kind,
    greedy_plan,
    oracle_plan,
    required_offload_bytes,
    total_bytes,
    uniform_plan,
)
from smemkit.offload.split_rule import host_rows_for_ratio

__all__ = [
    "BUILTIN_MODELS", "DEFAULT_TFLOPS", "CongestionPoint", "Hardware", "LaunchPlan", "ModelConfig",
    "OffloadedLinear", "Op", "PinnedBuffer", "PinnedMemoryError", "Plan", "SplitKVCache", "SplitScratch",
    "SplitWeight", "split_decode_attention",
    "TurningPoints", "by_kind", "choose_window", "config_from_hf", "decode_ops", "default_host_config",
    "greedy_plan", "hardware_from_profile", "host_rows_for_ratio", "load_model", "op_time", "oracle_plan",
    "plan_attention", "plan_launch", "required_offload_bytes", "run_congestion_probe", "split_linear",
    "total_bytes",
    "turning_points", "uniform_plan",
    "BatchSplitCache", "CpuPlacement", "GpuPlacement", "OffloadFitError", "OffloadedModel",
    "host_seqs_for_ratio", "load_offloaded", "model_config_from_source", "offload_model",
    "DecodeEngine", "DecodeGraphError", "decode_engine",
]

# name -> submodule, imported on first access (PEP 562): these need torch.
_LAZY = {
    "CongestionPoint": "congestion", "choose_window": "congestion", "default_host_config": "congestion",
    "run_congestion_probe": "congestion",
    "LaunchPlan": "gemv", "OffloadedLinear": "gemv", "SplitScratch": "gemv", "plan_launch": "gemv",
    "split_linear": "gemv",
    "PinnedBuffer": "pinned", "PinnedMemoryError": "pinned", "SplitWeight": "pinned",
    "SplitKVCache": "attention", "split_decode_attention": "attention", "plan_attention": "attention",
    "host_seqs_for_ratio": "attention",
    "OffloadedModel": "hf_model", "offload_model": "hf_model", "load_offloaded": "hf_checkpoint",
    "BatchSplitCache": "hf_cache", "OffloadFitError": "hf_layout", "CpuPlacement": "placement",
    "GpuPlacement": "placement", "model_config_from_source": "model_source",
    "DecodeEngine": "decode_graph", "DecodeGraphError": "decode_graph", "decode_engine": "decode_graph",
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f"smemkit.offload.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'smemkit.offload' has no attribute {name!r}")
