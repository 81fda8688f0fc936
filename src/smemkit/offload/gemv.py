"""The split GEMV / skinny GEMM for decode, under one name: ``smemkit.offload.gemv``.

The code lives in layers, each importing only the ones above it in this list:

- :mod:`.tier_model`: the time model of a split kernel's host and HBM tiers (pure Python);
- :mod:`.split_plan`: ``split_gemv.cu``'s constants and :func:`plan_launch` (pure Python);
- :mod:`.split_gemv`: compiling, occupancy and launching the kernel; :mod:`.scratch` its split-K
  workspace;
- :mod:`.path_rule`: which of cuBLAS, the kernel and the ring path ``path="auto"`` runs;
- :mod:`.linear`: ``split_linear`` and ``OffloadedLinear``.

This module re-exports their public names (the ones tests, benchmarks and the docs use as
``gemv.X``) and defines nothing itself; nothing inside smemkit imports it.
"""

from smemkit.offload.linear import OffloadedLinear, check_split_args, split_linear
from smemkit.offload.path_rule import (
    KERNEL_HBM_SLOWDOWN,
    KERNEL_HOST_FACTOR,
    KERNEL_MAX_ROWS,
    LINEAR_PATHS,
    RING_COPY_OVERHEAD_S,
    _link_rates,
    auto_path,
    faster_path,
    fixed_path,
    linear_path,
    path_times,
)
from smemkit.offload.scratch import SplitScratch
from smemkit.offload.split_gemv import (
    DTYPE_CODE,
    DTYPE_NAME,
    KERNEL_PARAMS,
    SOURCE,
    compile_variant,
    default_scratch,
    defines,
    host_config,
    kernel_name,
    launch_plan_for,
    plan_for,
    prepare,
    shipped_variants,
    source,
    source_constants,
    variant_label,
)
from smemkit.offload.split_plan import (
    BATCH_TILES,
    HBM_DEPTH,
    HBM_DEPTH_MAX,
    HBM_MT,
    HBM_ROWS,
    HOST_BARRIER_SMEM,
    HOST_KSTEP,
    HOST_ROWS,
    HOST_STEPS_MAX,
    HOST_WINDOW,
    HOST_WINDOW_UNIT,
    MAX_BATCH,
    MIN_CTAS_PER_SM,
    MMA_MACS_PER_US_PER_SM,
    ROW_BYTES,
    SMEM_PER_BLOCK_OPTIN,
    STATIC_SMEM,
    THREADS,
    TILE_K,
    TILE_M,
    WARPS,
    LaunchPlan,
    batch_tiles,
    check_host_stage,
    default_hbm_depth,
    fit_error,
    host_stage_bytes,
    host_stage_stride,
    host_steps_for_window,
    max_hbm_depth,
    mma_bytes_per_us,
    plan_launch,
    smem_bytes,
    static_smem,
    unit_coverage,
    window_to_host_steps,
)
from smemkit.offload.tier_model import (
    HBM_BYTES_PER_US,
    HBM_LATENCY_US,
    HOST_BYTES_PER_US,
    HOST_LATENCY_US,
    PARTIAL_COST,
    REDUCE_BYTES_PER_US,
    UNIT_OVERHEAD_US,
    balanced_ctas,
    choose_split,
    tier_time_us,
)

_balanced = balanced_ctas  # the name the CPU tests use

__all__ = [
    "BATCH_TILES", "DTYPE_CODE", "DTYPE_NAME", "HBM_BYTES_PER_US", "HBM_DEPTH", "HBM_DEPTH_MAX",
    "HBM_LATENCY_US", "HBM_MT", "HBM_ROWS", "HOST_BARRIER_SMEM", "HOST_BYTES_PER_US", "HOST_KSTEP",
    "HOST_LATENCY_US", "HOST_ROWS", "HOST_STEPS_MAX", "HOST_WINDOW", "HOST_WINDOW_UNIT",
    "KERNEL_HBM_SLOWDOWN", "KERNEL_HOST_FACTOR",
    "KERNEL_MAX_ROWS", "KERNEL_PARAMS", "LINEAR_PATHS", "MAX_BATCH", "MIN_CTAS_PER_SM",
    "MMA_MACS_PER_US_PER_SM", "PARTIAL_COST", "REDUCE_BYTES_PER_US", "RING_COPY_OVERHEAD_S", "ROW_BYTES",
    "SMEM_PER_BLOCK_OPTIN", "SOURCE", "STATIC_SMEM", "THREADS", "TILE_K", "TILE_M", "UNIT_OVERHEAD_US",
    "WARPS", "LaunchPlan", "OffloadedLinear", "SplitScratch", "auto_path", "balanced_ctas", "batch_tiles",
    "check_host_stage", "check_split_args", "choose_split", "compile_variant", "default_hbm_depth",
    "default_scratch", "defines", "faster_path", "fit_error", "fixed_path", "host_config",
    "host_stage_bytes", "host_stage_stride", "host_steps_for_window", "kernel_name", "launch_plan_for",
    "linear_path", "max_hbm_depth", "mma_bytes_per_us", "path_times", "plan_for", "plan_launch", "prepare",
    "shipped_variants", "smem_bytes", "source", "source_constants", "split_linear", "static_smem",
    "tier_time_us", "unit_coverage", "variant_label", "window_to_host_steps",
    "_balanced", "_link_rates",  # private, re-exported for the tests that reach them as gemv.X
]
