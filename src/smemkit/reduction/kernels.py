"""Compiling, checking and launching the generated variants of a spec on torch tensors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError
from smemkit.reduction.codegen import (
    Variant,
    dynamic_smem_bytes,
    generate,
    kernel_name,
    parameter_kinds,
    static_smem_bytes,
)
from smemkit.reduction.spec import ReductionSpec
from smemkit.runtime.device import NON_PORTABLE_CLUSTER_MAX, GpuInfo, gpu_info, require_gpu
from smemkit.runtime.launch import Kernel, KernelModule
from smemkit.runtime.tensors import check_tensor

CLUSTER_SIZES = (2, 4, 8, 16)


@cache
def compiled_kernel(spec: ReductionSpec, variant: Variant) -> Kernel:
    """The launchable kernel of one variant (generated and compiled once per process)."""
    module = KernelModule(generate(spec, variant), kernel_name(spec, variant))
    return module.function(kernel_name(spec, variant), parameter_kinds(spec))


def smem_per_cta(spec: ReductionSpec, variant: Variant, N: int) -> int:
    """Dynamic plus static shared memory one CTA of the variant needs at width N."""
    return dynamic_smem_bytes(spec, variant, N) + static_smem_bytes(spec, variant)


def legality(spec: ReductionSpec, variant: Variant, N: int, smem_limit: int,
             max_cluster: int) -> str | None:
    """None when the variant can run at width N (paper Eq. 3), else the reason it cannot."""
    if variant.kind == "cluster" and max_cluster < variant.P:
        return f"cluster size {variant.P} exceeds this GPU's maximum {max_cluster}"
    need = smem_per_cta(spec, variant, N)
    if need > smem_limit:
        return (f"needs {need} B of shared memory per CTA (slice of {N} columns over P = "
                f"{variant.P}), above the {smem_limit} B limit")
    return None


@dataclass(frozen=True)
class Prepared:
    """Checked arguments in kernel order, with the outputs to fill."""

    args: list[object]
    outputs: dict[str, torch.Tensor]
    M: int
    N: int


def prepare(spec: ReductionSpec, tensors: Mapping[str, torch.Tensor], scalars: Mapping[str, float],
            out: Mapping[str, torch.Tensor] | None = None) -> Prepared:
    """Check every argument (naming the one at fault) and allocate outputs not given."""
    missing = [n for n in (*spec.inputs, *spec.columns, *spec.row_inputs) if n not in tensors]
    if missing:
        raise InvalidArgumentError(f"{spec.name} is missing inputs {missing}")
    first = check_tensor(spec.inputs[0], tensors[spec.inputs[0]], dtype=torch.float32, ndim=2)
    M, N = first.shape
    if N == 0:
        raise InvalidArgumentError(f"{spec.inputs[0]} has rows of width 0; a row needs at least one column")
    device = first.device
    for n in spec.inputs:
        check_tensor(n, tensors[n], dtype=torch.float32, shape=(M, N), device=device)
    for n in spec.columns:
        check_tensor(n, tensors[n], dtype=torch.float32, shape=(N,), device=device)
    for n in spec.row_inputs:
        check_tensor(n, tensors[n], dtype=torch.float32, shape=(M,), device=device, alignment=4)
    values = []
    for name, default in spec.scalars:
        value = scalars.get(name, default)
        if value is None:
            raise InvalidArgumentError(f"{spec.name} needs the scalar argument {name!r}")
        values.append(float(value))
    out = dict(out or {})
    outputs: dict[str, torch.Tensor] = {}
    for o in spec.outputs:
        dtype = torch.int8 if o.dtype == "int8" else torch.float32
        t = out.get(o.name)
        if t is None:
            t = torch.empty((M, N), dtype=dtype, device=device)
        outputs[o.name] = check_tensor(f"out[{o.name!r}]", t, dtype=dtype, shape=(M, N), device=device)
    for name, _ in spec.row_outputs:
        t = out.get(name)
        if t is None:
            t = torch.empty((M,), dtype=torch.float32, device=device)
        outputs[name] = check_tensor(f"out[{name!r}]", t, dtype=torch.float32, shape=(M,),
                                     device=device, alignment=4)
    args: list[object] = [tensors[n] for n in (*spec.inputs, *spec.columns, *spec.row_inputs)]
    args += list(outputs.values()) + values + [M, N]
    return Prepared(args, outputs, M, N)


def launch(spec: ReductionSpec, variant: Variant, prepared: Prepared) -> None:
    """Run one variant; raises UnsupportedDeviceError (not a driver crash) when it cannot run."""
    if prepared.M == 0:
        return
    device = next(iter(prepared.outputs.values())).device.index
    launch_args(spec, variant, prepared.M, prepared.N, prepared.args, device)


def require_kernel_support(device: int) -> GpuInfo:
    """The generated kernels use mbarriers and bulk copies: compute capability 9.0 or newer."""
    info = gpu_info(device)
    if not info.supports_clusters:
        raise UnsupportedDeviceError(
            f"smemkit's reduction kernels need compute capability 9.0 or newer (mbarrier, bulk "
            f"copy); GPU {device} '{info.name}' is sm_{info.capability[0]}{info.capability[1]}. "
            f"The torch.ops.smemkit operators fall back to PyTorch there."
        )
    return info


def launch_args(spec: ReductionSpec, variant: Variant, M: int, N: int, args: list[object],
                device: int | None = None) -> None:
    """Check legality, size the grid and launch on ``device`` (default: the current one) with
    arguments already in kernel order."""
    device = require_gpu() if device is None else device
    info = require_kernel_support(device)
    reason = legality(spec, variant, N, info.smem_per_block_optin, NON_PORTABLE_CLUSTER_MAX)
    if reason:
        raise UnsupportedDeviceError(f"{spec.name} variant {variant.label} cannot run: {reason}")
    kernel = compiled_kernel(spec, variant)
    smem = dynamic_smem_bytes(spec, variant, N)
    clusters = M
    if variant.staged and (spec.columns or variant.prefetch):
        # Persistent: as many clusters as fit at once, each looping over rows, so a column
        # slice staged once serves every row (measured on the H200: layernorm_bwd 2.9 -> 3.4
        # TB/s at N = 64K). Without columns one cluster per row measured faster (softmax_bwd
        # 3.86 vs 3.56 TB/s), since freshly launched CTAs overlap their loads with others' work;
        # the prefetch variants stage row r+1 during row r to win that overlap back.
        clusters = min(clusters, resident_clusters(kernel, variant, smem, device))
    kernel.launch(clusters * variant.P, variant.threads, *args, cluster=variant.P, smem=smem,
                  device=device)


_RESIDENT: dict[tuple, int] = {}


def resident_clusters(kernel: Kernel, variant: Variant, smem: int, device: int | None = None) -> int:
    """Clusters (CTAs when P = 1) of the variant that ``device`` (default: the current GPU) holds
    at once (driver occupancy)."""
    key = (id(kernel), variant, smem, device)
    if key not in _RESIDENT:
        if variant.P > 1:
            count = kernel.max_active_clusters(variant.P, variant.threads, smem, device)
        else:
            count = kernel.max_active_ctas(variant.threads, smem, device)
        if count < 1:
            raise UnsupportedDeviceError(
                f"{kernel.name}: a cluster of {variant.P} CTAs with {smem} B of shared memory each "
                f"cannot be resident on this GPU"
            )
        _RESIDENT[key] = count
    return _RESIDENT[key]
