"""Compiling, checking and launching the generated variants of a spec on torch tensors."""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError
from smemkit.reduction.codegen import (
    LOOPED_REREAD_BLOCKS,
    LOOPED_REREAD_FALLBACK_BLOCKS,
    REGS_VECTORS,
    Variant,
    default_threads,
    dynamic_smem_bytes,
    generate,
    kernel_name,
    parameter_kinds,
    pass_batch,
    static_smem_bytes,
)
from smemkit.reduction.spec import ReductionSpec
from smemkit.runtime.compiler import DEFAULT_ARCH, compile_module
from smemkit.runtime.device import NON_PORTABLE_CLUSTER_MAX, GpuInfo, require_gpu, require_sm90
from smemkit.runtime.launch import Kernel, KernelModule
from smemkit.runtime.tensors import check_tensor

if TYPE_CHECKING:
    import torch

CLUSTER_SIZES = (2, 4, 8, 16)
# reread_l2: the share of the L2 that the rows in flight may fill with the bytes they read again.
# Less than all of it: outputs and first-pass loads pass through the L2 too, and the H100/H200 L2
# is two partitions; more than half, since a row's footprint is counted whole although only part
# of it is live at once. Swept on the H200 (0.35, 0.5, 0.75, 1.0; commit cf7f688): 0.75 was the
# fastest at most 32K-64K points and within noise at 8K-16K.
# SMEMKIT_REREAD_L2_FRACTION overrides it for experiments.
L2_BUDGET_FRACTION = 0.75
# The looped re-read kernel's builds, (CTAs per SM, whole-vector path), in the order kernel_source
# tries them: the paired path at three CTAs per SM (lars, layernorm_bwd, softmax_bwd, quant_int8
# under NVRTC 13.0), else the unrolled one at four (pearson_bwd, wvar_bwd), else the general loop
# at three, then the same two at two CTAs per SM.
LOOPED_REREAD_BUILDS = ((LOOPED_REREAD_BLOCKS, "paired"), (4, "unrolled"), (LOOPED_REREAD_BLOCKS, "none"),
                        (LOOPED_REREAD_FALLBACK_BLOCKS, "paired"), (LOOPED_REREAD_FALLBACK_BLOCKS, "none"))


@cache
def compiled_kernel(spec: ReductionSpec, variant: Variant) -> Kernel:
    """The launchable kernel of one variant (generated and compiled once per process)."""
    if variant.per_row:  # the same kernel as the persistent variant: only the grid differs
        return compiled_kernel(spec, replace(variant, per_row=False))
    module = KernelModule(kernel_source(spec, variant), kernel_name(spec, variant))
    return module.function(kernel_name(spec, variant), parameter_kinds(spec))


def kernel_source(spec: ReductionSpec, variant: Variant) -> str:
    """The CUDA source ``compiled_kernel`` builds: ``generate``'s, except for the looped re-read
    kernel, which takes the first of LOOPED_REREAD_BUILDS that this NVRTC compiles for sm_90a
    without spilling registers (checked through the disk cache), or the last one if every build
    spills (the compile tests then report it)."""
    if not variant.looped_reread:
        return generate(spec, variant)
    name = kernel_name(spec, variant)
    for blocks, whole in LOOPED_REREAD_BUILDS:
        source = generate(spec, variant, min_blocks=blocks, whole=whole)
        if not compile_module(source, name, arch=DEFAULT_ARCH).resources[name].spills:
            return source
    return source


def smem_per_cta(spec: ReductionSpec, variant: Variant, N: int) -> int:
    """Dynamic plus static shared memory one CTA of the variant needs at width N."""
    return dynamic_smem_bytes(spec, variant, N) + static_smem_bytes(spec, variant)


def legality(spec: ReductionSpec, variant: Variant, N: int, smem_limit: int,
             max_cluster: int) -> str | None:
    """None when the variant can run at width N (paper Eq. 3), else the reason it cannot."""
    if variant.kind == "triton":
        return triton_unavailable(spec)
    if variant.kind == "cluster" and max_cluster < variant.P:
        return f"cluster size {variant.P} exceeds this GPU's maximum {max_cluster}"
    if variant.kind == "regs" and regs_vectors_needed(N, variant.threads) > variant.vregs:
        return (f"a row of {N} columns needs {regs_vectors_needed(N, variant.threads)} vectors per "
                f"thread and input at {variant.threads} threads; this regs kernel holds "
                f"{variant.vregs} (at most {REGS_VECTORS[-1]})")
    need = smem_per_cta(spec, variant, N)
    if need > smem_limit:
        return (f"needs {need} B of shared memory per CTA (slice of {N} columns over P = "
                f"{variant.P}), above the {smem_limit} B limit")
    return None


def triton_unavailable(spec: ReductionSpec) -> str | None:
    """None when smemkit has a Triton kernel for ``spec`` here (a built-in workload, Triton
    installed), else why not."""
    from smemkit.reduction.workloads import BUILTIN

    if BUILTIN.get(spec.name) is not spec:
        return f"a user spec ({spec.name!r}) has no Triton kernel: only the six built-in workloads have one"
    if importlib.util.find_spec("triton") is None:
        return "the triton package is not installed (pip install triton)"
    return None


def l2_budget_fraction() -> float:
    """L2_BUDGET_FRACTION, or SMEMKIT_REREAD_L2_FRACTION when set (a number in (0, 16])."""
    raw = os.environ.get("SMEMKIT_REREAD_L2_FRACTION")
    if raw is None:
        return L2_BUDGET_FRACTION
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0 < value <= 16:
        raise InvalidArgumentError(f"SMEMKIT_REREAD_L2_FRACTION={raw!r}: a number in (0, 16]")
    return value


def reread_l2_row_bytes(spec: ReductionSpec, N: int) -> int:
    """L2 bytes one row in flight of the re-read kernel must keep between its first and last
    read: every input read by two or more passes (b_keep x N)."""
    return spec.bytes.keep * N


def reread_l2_grid(spec: ReductionSpec, M: int, N: int, l2_bytes: int, resident: int,
                   fraction: float | None = None) -> int:
    """CTAs of the ``reread_l2`` kernel, i.e. rows in flight (one row per CTA at a time):
    as many as the GPU holds (``resident``), but no more than fit ``fraction`` x L2 at
    ``reread_l2_row_bytes`` each (the column parameters, read by every row, counted once);
    at least 1 and at most M."""
    fraction = l2_budget_fraction() if fraction is None else fraction
    row_bytes = reread_l2_row_bytes(spec, N)
    budget = fraction * l2_bytes - 4 * len(spec.columns) * N
    rows = int(budget // row_bytes) if row_bytes else resident
    return max(1, min(rows, resident, M))


def loads_in_flight_per_sm(spec: ReductionSpec, variant: Variant, N: int, ctas: int,
                           sm_count: int) -> float:
    """Bytes of 16-byte loads an SM with work has outstanding at most, as the compiled code issues
    them (checked in the SASS): CTAs per busy SM x the largest, over the passes, of
    inputs x min(threads x vectors per input, vectors of the row) x 16 B, where a thread has
    ``pass_batch`` vectors per input in flight in reread_l2 (4 for passes of one or two inputs,
    3 for three), ``vregs`` per input in regs (every input loaded before stage 1), and one in the
    other variants (their loop loads, branches and consumes one vector per input at a time,
    whatever its unroll pragma). Not modelled: reread_t512's whole-vector paths (rows of whole
    vectors), which keep two per input in flight (paired) or as ptxas schedules the unrolled loop."""
    nvec = -(-N // 4)

    def per_cta(inputs: int, per_input: int) -> int:
        return inputs * min(variant.threads * per_input, nvec) * 16

    if variant.kind == "regs":
        passes = [per_cta(len(spec.read_inputs), variant.vregs)]
    else:
        passes = [per_cta(len(p), pass_batch(variant, len(p)) or 1) for p in spec.pass_inputs]
    return max(passes) * ctas / min(ctas, sm_count)


def regs_vectors_needed(N: int, threads: int) -> int:
    """16-byte vectors per thread and input a ``regs`` kernel must hold for rows of width N:
    a row touches N / 4 vectors when N is a multiple of 4 (rows then start 16-byte aligned),
    else up to (N + 6) // 4 (a partial vector at each end)."""
    nvec = N // 4 if N % 4 == 0 else (N + 6) // 4
    return -(-nvec // threads)


def check_regs_width(N: int, threads: int) -> None:
    """Raise InvalidArgumentError when a row of width N is too wide for any ``regs`` build at
    ``threads`` threads (REGS_VECTORS[-1] vectors per thread and input)."""
    if regs_vectors_needed(N, threads) > REGS_VECTORS[-1]:
        most = 4 * REGS_VECTORS[-1] * threads
        raise InvalidArgumentError(
            f"N = {N} is above the regs variant's {most} columns at {threads} threads ({most - 3} "
            f"when N is not a multiple of 4: a partial vector at each row end); use "
            f"variant='reread_l2' or a cluster variant")


def regs_variant(N: int, threads: int = 0) -> Variant:
    """The ``regs`` kernel for width N at ``threads`` (0: the kind's default): the fewest held
    vectors that cover the row (the largest build when none does; ``legality`` then says why it
    cannot run)."""
    threads = threads or default_threads("regs")
    need = regs_vectors_needed(N, threads)
    vregs = next((v for v in REGS_VECTORS if v >= need), REGS_VECTORS[-1])
    return Variant("regs", threads=threads, vregs=vregs)


@dataclass(frozen=True)
class Prepared:
    """Checked arguments in kernel order, with the outputs to fill."""

    args: list[object]
    outputs: dict[str, torch.Tensor]
    M: int
    N: int
    tensors: dict[str, torch.Tensor]  # the checked inputs by name (what a Triton kernel takes)
    scalars: dict[str, float]


def prepare(spec: ReductionSpec, tensors: Mapping[str, torch.Tensor], scalars: Mapping[str, float],
            out: Mapping[str, torch.Tensor] | None = None) -> Prepared:
    """Check every argument (naming the one at fault) and allocate outputs not given."""
    import torch

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
    values = {}
    for name, default in spec.scalars:
        value = scalars.get(name, default)
        if value is None:
            raise InvalidArgumentError(f"{spec.name} needs the scalar argument {name!r}")
        values[name] = float(value)
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
    named = {n: tensors[n] for n in (*spec.inputs, *spec.columns, *spec.row_inputs)}
    args: list[object] = [*named.values(), *outputs.values(), *values.values(), M, N]
    return Prepared(args, outputs, M, N, named, values)


def launch(spec: ReductionSpec, variant: Variant, prepared: Prepared) -> None:
    """Run one variant; raises UnsupportedDeviceError (not a driver crash) when it cannot run."""
    import torch

    if prepared.M == 0:
        return
    device = next(iter(prepared.outputs.values())).device.index
    if variant.kind == "triton":
        reason = triton_unavailable(spec)
        if reason:
            raise UnsupportedDeviceError(f"{spec.name} variant triton cannot run: {reason}")
        from smemkit.reduction.triton_kernels import TRITON, dispatch_config

        with torch.cuda.device(device):
            TRITON[spec.name](prepared.tensors, prepared.scalars, prepared.outputs,
                              config=dispatch_config(spec.name, prepared.N))
        return
    launch_args(spec, variant, prepared.M, prepared.N, prepared.args, device)


def require_kernel_support(device: int) -> GpuInfo:
    """The generated kernels use mbarriers and bulk copies: compute capability 9.0 or newer."""
    return require_sm90(device, "smemkit's reduction kernels (mbarrier, bulk copy)",
                        ". The torch.ops.smemkit operators fall back to PyTorch there.")


def launch_args(spec: ReductionSpec, variant: Variant, M: int, N: int, args: list[object],
                device: int | None = None) -> None:
    """Check legality, size the grid and launch on ``device`` (default: the current one) with
    arguments already in kernel order."""
    device = require_gpu() if device is None else device
    info = require_kernel_support(device)
    if variant.kind == "triton":
        raise InvalidArgumentError("launch_args runs generated CUDA kernels; the triton variant runs "
                                   "through launch()")
    if variant.kind == "regs":
        check_regs_width(N, variant.threads)  # the caller's width, not the device, is at fault
    reason = legality(spec, variant, N, info.smem_per_block_optin, NON_PORTABLE_CLUSTER_MAX)
    if reason:
        raise UnsupportedDeviceError(f"{spec.name} variant {variant.label} cannot run: {reason}")
    kernel = compiled_kernel(spec, variant)
    smem = dynamic_smem_bytes(spec, variant, N)
    clusters = _grid(spec, variant, M, N, device, kernel, smem, info.l2_bytes)
    kernel.launch(clusters * variant.P, variant.threads, *args, cluster=variant.P, smem=smem,
                  device=device)


def grid_clusters(spec: ReductionSpec, variant: Variant, M: int, N: int, device: int) -> int:
    """Clusters (CTAs when P = 1) a launch of the variant at (M, N) uses on ``device``."""
    return _grid(spec, variant, M, N, device, compiled_kernel(spec, variant),
                 dynamic_smem_bytes(spec, variant, N), require_kernel_support(device).l2_bytes)


def _grid(spec: ReductionSpec, variant: Variant, M: int, N: int, device: int, kernel: Kernel, smem: int,
          l2_bytes: int) -> int:
    """``grid_clusters`` from what a launch has looked up already (kernel, its shared memory,
    the GPU's L2 size)."""
    if variant.staged and (spec.columns or variant.prefetch):
        # Persistent: as many clusters as fit at once, each looping over rows, so a column
        # slice staged once serves every row (measured on the H200: layernorm_bwd 2.9 -> 3.4
        # TB/s at N = 64K). Without columns one cluster per row measured faster (softmax_bwd
        # 3.86 vs 3.56 TB/s), since freshly launched CTAs overlap their loads with others' work;
        # the prefetch variants stage row r+1 during row r to win that overlap back.
        return min(M, resident_clusters(kernel, variant, smem, device))
    if variant.kind == "reread_l2" and not variant.per_row:
        # Persistent, the rows in flight capped so their re-read bytes stay in L2. (per_row: one
        # CTA per row, the hardware handing each freed slot the next row; no static share of rows
        # per CTA whose last round idles part of the GPU, but no cap on the rows in flight either:
        # each is faster at some shapes on the H200 (one CTA per row: lars 16K 4.04 -> 4.22 TB/s;
        # pearson_bwd 32K 3.71 -> 3.44), so both are candidates, commit 91c4355.)
        return reread_l2_grid(spec, M, N, l2_bytes, resident_clusters(kernel, variant, smem, device))
    return M


def ctas_per_sm_at_once(spec: ReductionSpec, variant: Variant, M: int, N: int, device: int) -> float:
    """CTAs of a non-cluster variant resident per SM at once at (M, N): the driver's occupancy,
    or fewer when the grid is smaller than what the GPU holds (the cost model's T_save)."""
    kernel = compiled_kernel(spec, variant)
    resident = resident_clusters(kernel, variant, dynamic_smem_bytes(spec, variant, N), device)
    sm_count = require_kernel_support(device).sm_count
    return min(resident, grid_clusters(spec, variant, M, N, device)) / sm_count


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
