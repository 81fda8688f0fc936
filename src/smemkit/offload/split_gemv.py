"""The split GEMV kernel (``split_gemv.cu``): compiling it, asking the driver how many CTAs fit,
and launching one planned call.

``host_ctas`` CTAs stream a :class:`~smemkit.offload.pinned.SplitWeight`'s host rows with register
loads (each with at most ``host_window`` bytes of host reads in flight), the others stream the
HBM rows through cp.async stage rings, up to 64 input rows per launch. The plan of a launch is
pure Python (:mod:`.split_plan`); the op that chooses between this kernel, cuBLAS and the ring
path is :mod:`.linear`.
"""

from __future__ import annotations

import threading
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError, check_positive_int
from smemkit.offload.congestion import resolve_host_config
from smemkit.offload.pinned import DTYPE_CODE, DTYPE_NAME, SplitWeight
from smemkit.offload.scratch import SplitScratch
from smemkit.offload.split_plan import (
    BATCH_TILES,
    HOST_WINDOW,
    MAX_BATCH,
    SMEM_PER_BLOCK_OPTIN,
    THREADS,
    LaunchPlan,
    batch_tiles,
    check_host_stage,
    fit_error,
    plan_launch,
)
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, int_defines, package_source

SOURCE = "offload/split_gemv.cu"
KERNEL_PARAMS = ("ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr",
                 "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32")


def kernel_name(nt: int) -> str:
    return f"split_gemv_nt{nt}"


@cache
def source() -> str:
    return package_source(SOURCE)


def defines(dtype: torch.dtype, host_load: int = 0, host_stage: int = 1) -> dict[str, int]:
    """Compile-time choices of split_gemv.cu (see its header): dtype, the host load instruction
    (0 ld.global.cs, the default; 1 ld.global.nc.L1::no_allocate; 2 ld.global), and how a host warp
    feeds its mma (1 staged through shared memory, the default; 0 fragments loaded directly; 2 staged
    with the next group's loads issued before the current group's math)."""
    if dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"split kernel dtype must be bfloat16 or float16, got {dtype}")
    if isinstance(host_load, bool) or host_load not in (0, 1, 2):
        msg = ("host_load must be 0 (ld.global.cs, the default), 1 (ld.global.nc) or 2 (ld.global), "
               f"got {host_load!r}")
        if host_load == 3:
            msg += ("; host_load=3 (ld.global.cs) is now the default 0, and the cp.async host ring it was "
                    "compared with is gone (measured 2.55x the ideal at r = 1, docs/offload.md)")
        raise InvalidArgumentError(msg)
    check_host_stage(host_stage)
    return {"GEMV_DTYPE": DTYPE_CODE[dtype], "HOST_LOAD": host_load, "HOST_STAGE": host_stage}


def variant_label(dtype: torch.dtype, host_load: int = 0, host_stage: int = 1) -> str:
    return f"offload/split_gemv.{DTYPE_NAME[dtype]}.hl{host_load}.st{host_stage}"


def compile_variant(dtype: torch.dtype, arch: str = DEFAULT_ARCH, host_load: int = 0,
                    host_stage: int = 1) -> CompiledModule:
    """The module for one dtype (all four batch-tile kernels), compiled for ``arch``."""
    return compile_module(source(), variant_label(dtype, host_load, host_stage), arch=arch,
                          defines=defines(dtype, host_load, host_stage))


def shipped_variants() -> list[tuple[torch.dtype, int, int]]:
    """(dtype, HOST_LOAD, HOST_STAGE) the library launches by default: both dtypes, ld.global.cs host
    reads staged through shared memory (the measured host path, docs/offload.md)."""
    return [(torch.bfloat16, 0, 1), (torch.float16, 0, 1)]


def source_constants(text: str | None = None) -> dict[str, int]:
    """``#define NAME <int>`` values of split_gemv.cu (to check the mirrors above)."""
    text = source() if text is None else text
    return int_defines(text)


# ---- the GPU side -------------------------------------------------------------------------------

_MODULES: dict[tuple[torch.dtype, int, int], object] = {}
_MODULES_LOCK = threading.Lock()


def _kernel(dtype: torch.dtype, nt: int, host_load: int = 0, host_stage: int = 1):
    from smemkit.runtime.launch import KernelModule

    key = (dtype, host_load, host_stage)
    with _MODULES_LOCK:
        if key not in _MODULES:
            _MODULES[key] = (KernelModule(source(), variant_label(dtype, host_load, host_stage),
                                          defines(dtype, host_load, host_stage)), {})
        module, kernels = _MODULES[key]
        if nt not in kernels:
            kernels[nt] = module.function(kernel_name(nt), KERNEL_PARAMS)
        return kernels[nt]


@cache
def _slots(dtype: torch.dtype, nt: int, device_index: int, host_load: int = 0, host_stage: int = 1,
           smem: int = 0) -> int:
    """CTAs of the nt kernel the GPU holds at once with ``smem`` bytes of dynamic shared memory
    (driver occupancy x SMs)."""
    with torch.cuda.device(device_index):
        return _kernel(dtype, nt, host_load, host_stage).max_active_ctas(THREADS, smem)


def plan_for(n: int, k: int, batch: int, n_hbm: int, dtype: torch.dtype, device_index: int, *,
             host_ctas: int, host_steps: int, host_load: int = 0, host_stage: int = 1,
             split_g: int | None = None, split_h: int | None = None, hbm_depth: int | None = None,
             ctas_per_sm: int | None = None) -> LaunchPlan:
    """:func:`plan_launch` with the slots the GPU gives this launch's shared memory (at most
    ``ctas_per_sm`` CTAs per SM when given)."""
    from smemkit.runtime.device import gpu_info, require_sm90

    nt = batch_tiles(batch)
    info = gpu_info(device_index)
    limit = min(SMEM_PER_BLOCK_OPTIN, int(info.smem_per_block_optin))
    if host_stage == 3:  # plan_launch checks the value itself
        require_sm90(device_index, "host_stage = 3 (host rows bulk-copied with cp.async.bulk)")
    if ctas_per_sm is not None:
        check_positive_int("ctas_per_sm", ctas_per_sm)
    # plan_launch checks the arguments and the shared memory (a forced hbm_depth that cannot fit
    # raises there, naming it); this first plan (2 slots) only learns the launch's shared memory.
    probe = plan_launch(n, k, batch, n_hbm, slots=2, host_ctas=host_ctas, host_steps=host_steps,
                        hbm_depth=hbm_depth, host_stage=host_stage, smem_limit=limit)
    slots = _slots(dtype, nt, device_index, host_load, host_stage, probe.smem)
    if slots < 1:
        raise InvalidArgumentError(fit_error(
            nt, batch, probe.smem, limit, hbm_depth=probe.hbm_depth if n_hbm else None,
            host_steps=host_steps if n_hbm < n else None, forced_depth=hbm_depth is not None,
            what=": the driver's occupancy calculator fits no CTA per SM", host_stage=host_stage))
    if ctas_per_sm is not None:
        slots = min(slots, ctas_per_sm * info.sm_count)
    return plan_launch(n, k, batch, n_hbm, slots=slots, host_ctas=host_ctas, host_steps=host_steps,
                       split_g=split_g, split_h=split_h, hbm_depth=probe.hbm_depth, host_stage=host_stage,
                       smem_limit=limit)


def prepare(dtype: torch.dtype, device_index: int, max_batch: int = MAX_BATCH, host_load: int = 0,
            host_stage: int = 1) -> None:
    """Compile and load the kernels ``max_batch`` rows need on this GPU (before any graph capture)."""
    with torch.cuda.device(device_index):
        for nt in BATCH_TILES:
            if nt <= batch_tiles(min(max_batch, MAX_BATCH)):
                kern = _kernel(dtype, nt, host_load, host_stage)
                kern.module._load(kern.name, device_index)


_SCRATCH: dict[int, SplitScratch] = {}


def default_scratch(device_index: int) -> SplitScratch:
    if device_index not in _SCRATCH:
        _SCRATCH[device_index] = SplitScratch(device_index)
    return _SCRATCH[device_index]


def _ptr(t: torch.Tensor | None) -> int:
    return 0 if t is None or t.numel() == 0 else int(t.data_ptr())


def host_config(host_ctas: int | None, host_window: int | None, device_index: int) -> tuple[int, int]:
    """(host CTAs, host k-steps per group) for a call: the caller's values (a window the kernel
    cannot honour raises), else the device profile's congestion choice rounded to the kernel's
    window units (:func:`~smemkit.offload.congestion.resolve_host_config`)."""
    return resolve_host_config(host_ctas, host_window, device_index, HOST_WINDOW)


def launch(x: torch.Tensor, y: torch.Tensor, w: SplitWeight, bias: torch.Tensor | None, host_ctas: int,
           host_steps: int, scratch: SplitScratch, split_g: int | None, split_h: int | None,
           host_load: int, host_stage: int, hbm_depth: int | None = None,
           ctas_per_sm: int | None = None) -> LaunchPlan:
    """Launch one planned call of at most MAX_BATCH rows: ``y = x @ W.T (+ bias)`` on the current
    stream (arguments checked by the caller); returns the plan it ran."""
    b, k = x.shape
    n = w.shape[0]
    device_index = w.device.index
    plan = plan_for(n, k, b, w.n_hbm, w.dtype, device_index, host_ctas=host_ctas, host_steps=host_steps,
                    host_load=host_load, host_stage=host_stage, split_g=split_g, split_h=split_h,
                    hbm_depth=hbm_depth, ctas_per_sm=ctas_per_sm)
    ws, counters = scratch.reserve(plan.ws_floats, plan.n_counters)
    kern = _kernel(w.dtype, plan.nt, host_load, host_stage)
    kern.launch(plan.grid, THREADS, _ptr(w.hbm), w.host_ptr if w.host_rows else 0, _ptr(x), _ptr(bias),
                _ptr(y), _ptr(ws), _ptr(counters), n, k, b, w.n_hbm, *plan.kernel_args(), smem=plan.smem,
                device=device_index)
    return plan


def launch_plan_for(x_rows: int, weight: SplitWeight, *, host_ctas: int | None = None,
                    host_window: int | None = None, host_load: int = 0, host_stage: int = 1,
                    split_g: int | None = None, split_h: int | None = None, hbm_depth: int | None = None,
                    ctas_per_sm: int | None = None) -> LaunchPlan:
    """The plan ``split_linear`` would use for an input of ``x_rows`` (<= 64) rows (GPU needed for
    the occupancy figure)."""
    hc, hs = host_config(host_ctas, host_window, weight.device.index)
    n, k = weight.shape
    return plan_for(n, k, x_rows, weight.n_hbm, weight.dtype, weight.device.index, host_ctas=hc,
                    host_steps=hs, host_load=host_load, host_stage=host_stage, split_g=split_g,
                    split_h=split_h, hbm_depth=hbm_depth, ctas_per_sm=ctas_per_sm)
