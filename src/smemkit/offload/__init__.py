"""DAK-style offloading (SPEC §2): weights and KV caches split between HBM and pinned host memory.

This part so far holds the planner only (issue 5): the per-operation cost model, model
descriptions, and the greedy / uniform / oracle offload-ratio planners. Kernels come later.
"""

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

__all__ = [
    "BUILTIN_MODELS", "DEFAULT_TFLOPS", "Hardware", "ModelConfig", "Op", "Plan", "TurningPoints",
    "by_kind", "config_from_hf", "decode_ops", "greedy_plan", "hardware_from_profile", "load_model",
    "op_time", "oracle_plan", "required_offload_bytes", "total_bytes", "turning_points", "uniform_plan",
]
