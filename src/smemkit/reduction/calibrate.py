"""GPU measurements the cost model needs at a shape: T_B, T_ctrl per P, resident clusters.

Only the non-cluster kernels and work-free control kernels are timed here — never a cluster
workload kernel — so the model's prediction is made before the cluster kernel has run. Also timed:
smemkit's Triton kernel, which dispatch weighs against the model's pick (not a model input).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

import torch

from smemkit.errors import UnsupportedDeviceError
from smemkit.reduction.codegen import Variant, dynamic_smem_bytes
from smemkit.reduction.cost_model import Measured
from smemkit.reduction.kernels import (
    CLUSTER_SIZES,
    Prepared,
    compiled_kernel,
    ctas_per_sm_at_once,
    launch,
    launch_args,
    prepare,
    require_kernel_support,
    resident_clusters,
    triton_unavailable,
)
from smemkit.reduction.spec import ReductionSpec
from smemkit.runtime.timing import time_both_modes


def _control_args(spec: ReductionSpec, M: int, N: int) -> list[object]:
    """Null pointers (a control kernel dereferences none), unit scalars, the shape."""
    pointers = (len(spec.inputs) + len(spec.columns) + len(spec.row_inputs) + len(spec.outputs)
                + len(spec.row_outputs))
    return [0] * pointers + [1.0] * len(spec.scalars) + [M, N]


def control_ms(spec: ReductionSpec, variant: Variant, M: int, N: int, reps: int = 20) -> float:
    """Median time of the work-free twin of ``variant`` at (M, N), the faster of graph replays and
    launches (``time_both_modes``, as the kernels it stands for are timed)."""
    control = replace(variant, control=True)  # every other field kept (regs' vregs, prefetch)
    args = _control_args(spec, M, N)
    return time_both_modes(lambda: launch_args(spec, control, M, N, args), warmup=3,
                           reps=reps).best.median_ms


def baseline_ms(spec: ReductionSpec, prepared: Prepared, reps: int = 20) -> tuple[float, Variant]:
    """T_B: the fastest legal non-cluster variant at this shape (``api.non_cluster_variants``),
    timed from HBM (cold L2), the faster of graph replays and launches (``time_both_modes``)."""
    from smemkit.reduction.api import non_cluster_variants

    limit = require_kernel_support(torch.cuda.current_device()).smem_per_block_optin
    best: tuple[float, Variant] | None = None
    for variant in non_cluster_variants(spec, prepared.N, limit):
        try:
            def call(v: Variant = variant) -> None:
                launch_args(spec, v, prepared.M, prepared.N, prepared.args)
            ms = time_both_modes(call, warmup=3, reps=reps).best.median_ms
        except UnsupportedDeviceError:
            continue
        if best is None or ms < best[0]:
            best = (ms, variant)
    if best is None:
        raise UnsupportedDeviceError(f"{spec.name}: no non-cluster variant can run at N = {prepared.N}")
    return best


def measure(spec: ReductionSpec, tensors: Mapping[str, torch.Tensor], scalars: Mapping[str, float],
            sizes: Iterable[int] = CLUSTER_SIZES) -> tuple[Measured, str]:
    """Everything the model needs at this shape; returns (Measured, the baseline variant's label)."""
    prepared = prepare(spec, tensors, scalars)
    M, N = prepared.M, prepared.N
    t_b, baseline = baseline_ms(spec, prepared)
    triton_ms = None
    if triton_unavailable(spec) is None:
        triton_ms = time_both_modes(lambda: launch(spec, Variant("triton"), prepared), warmup=3,
                                    reps=20).best.median_ms
    per_sm = ctas_per_sm_at_once(spec, baseline, M, N, torch.cuda.current_device())
    one_cta = control_ms(spec, Variant("reread"), M, N)
    excess: dict[int, float] = {}
    resident: dict[int, int] = {}
    for P in sizes:
        variant = Variant("cluster", P)
        try:
            excess[P] = control_ms(spec, variant, M, N) - one_cta
            kernel = compiled_kernel(spec, variant)
            resident[P] = resident_clusters(kernel, variant, dynamic_smem_bytes(spec, variant, N))
        except UnsupportedDeviceError:
            continue
    return (Measured(t_b, excess, resident, baseline_variant=baseline.label, baseline_ctas_per_sm=per_sm,
                     triton_ms=triton_ms), baseline.label)
