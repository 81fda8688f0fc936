"""The ring path's host-chunk GEMM (``chunk_gemm.cu``): a split-K tensor-core GEMM that spreads a
skinny ``x @ rows.T`` over the whole GPU.

A ring chunk is a few hundred weight rows, so its output has few tiles; cuBLAS runs each tile
over the whole K (26-43 us per chunk on the H200, ``benchmarks/results/h200/ring_side/``), and
the last chunk's GEMM is the ring's tail after its copy. :func:`plan_split` cuts K into slices so
the grid has about one CTA per SM (a second kernel sums the slices' partials in a fixed order);
:func:`chunk_linear` launches them into a column slice of the layer's output. The plan is pure
Python (tested without a GPU).
"""

from __future__ import annotations

import math
import threading
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload.scratch import SplitScratch
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, package_source

SOURCE = "offload/chunk_gemm.cu"
KERNEL = "chunk_gemm"
PARAMS = ("ptr",) * 5 + ("i32",) * 8
REDUCE = "chunk_reduce"
REDUCE_PARAMS = ("ptr",) * 3 + ("i32",) * 4
REDUCE_THREADS = 256
# Mirrors of chunk_gemm.cu's constants (a CPU test checks them against the source).
THREADS = 128
TILE = 64  # output tile is TILE x TILE
K_STEP = 64
STAGES = 4
SMEM_BYTES = STAGES * 2 * TILE * K_STEP * 2
CTAS_PER_SM = 1  # the grid the split aims at (the kernel fits 3 per SM)
MIN_STEPS_PER_SLICE = 2  # fewer and the slices' partial traffic outweighs their k-steps
DTYPE_CODE = {torch.bfloat16: 0, torch.float16: 1}
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float16: "fp16"}


def plan_split(m: int, n: int, k: int, sms: int) -> tuple[int, int, int]:
    """(tiles, split, k-steps per slice) for an (m x n) output over ``k``: as many K slices as
    bring the grid to ``CTAS_PER_SM`` x ``sms`` CTAs, each of at least ``MIN_STEPS_PER_SLICE``
    k-steps, rebalanced so no slice is empty."""
    tiles = math.ceil(m / TILE) * math.ceil(n / TILE)
    ksteps = math.ceil(k / K_STEP)
    want = math.ceil(CTAS_PER_SM * sms / tiles)
    split = max(1, min(want, ksteps // MIN_STEPS_PER_SLICE))
    steps = math.ceil(ksteps / split)
    return tiles, math.ceil(ksteps / steps), steps


def workspace_floats(m: int, n: int, split: int) -> int:
    """fp32 partials a launch needs (one m x n matrix per K slice; none without a split)."""
    return split * m * n if split > 1 else 0


def eligible(x2: torch.Tensor, rows: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether the kernel takes these operands: a 16-bit dtype shared by all three, unit inner
    strides, and x / rows rows starting on 16-byte boundaries (its copies are 16-byte cp.async).
    The ring falls back to cuBLAS otherwise."""
    if x2.dtype not in DTYPE_CODE or rows.dtype != x2.dtype or out.dtype != x2.dtype:
        return False
    if x2.stride(1) != 1 or rows.stride(1) != 1 or out.stride(1) != 1:
        return False
    k = x2.shape[1]
    return (k % 8 == 0 and x2.stride(0) % 8 == 0 and rows.stride(0) % 8 == 0
            and x2.data_ptr() % 16 == 0 and rows.data_ptr() % 16 == 0)


@cache
def source() -> str:
    return package_source(SOURCE)


def variant_label(dtype: torch.dtype) -> str:
    return f"offload/chunk_gemm.{DTYPE_NAME[dtype]}"


def defines(dtype: torch.dtype) -> dict[str, int]:
    if dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"chunk GEMM dtype must be bfloat16 or float16, got {dtype}")
    return {"CG_DTYPE": DTYPE_CODE[dtype]}


def compile_variant(dtype: torch.dtype, arch: str = DEFAULT_ARCH) -> CompiledModule:
    return compile_module(source(), variant_label(dtype), arch=arch, defines=defines(dtype))


# ---- the GPU side -------------------------------------------------------------------------------

_KERNELS: dict[tuple[torch.dtype, str], object] = {}
_LOCK = threading.Lock()


def _kernel(dtype: torch.dtype, name: str = KERNEL):
    from smemkit.runtime.launch import KernelModule

    with _LOCK:
        if (dtype, KERNEL) not in _KERNELS:
            module = KernelModule(source(), variant_label(dtype), defines(dtype))
            _KERNELS[dtype, KERNEL] = module.function(KERNEL, PARAMS)
            _KERNELS[dtype, REDUCE] = module.function(REDUCE, REDUCE_PARAMS)
        return _KERNELS[dtype, name]


def prepare(dtype: torch.dtype, device_index: int) -> None:
    """Load both kernels on this GPU (before any graph capture)."""
    for name in (KERNEL, REDUCE):
        _kernel(dtype, name).module._load(name, device_index)


def chunk_linear(x2: torch.Tensor, rows: torch.Tensor, bias: torch.Tensor | None, out: torch.Tensor,
                 scratch: SplitScratch) -> None:
    """``out = x2 @ rows.T (+ bias)`` on the current stream (``out`` may be a column slice of a
    row-major matrix). Operands must pass :func:`eligible`; launches sharing ``scratch`` must run
    one after another (one stream)."""
    from smemkit.runtime.device import gpu_info

    m, k = x2.shape
    n = rows.shape[0]
    device_index = x2.device.index
    tiles, split, steps = plan_split(m, n, k, gpu_info(device_index).sm_count)
    ws, _ = scratch.reserve(workspace_floats(m, n, split), 0)
    bias_ptr = 0 if bias is None else bias.data_ptr()
    _kernel(x2.dtype).launch(
        (tiles, split, 1), THREADS, x2.data_ptr(), rows.data_ptr(), bias_ptr, out.data_ptr(),
        0 if ws is None else ws.data_ptr(), m, n, k, x2.stride(0), rows.stride(0), out.stride(0), split,
        steps, smem=SMEM_BYTES, device=device_index)
    if split > 1:
        _kernel(x2.dtype, REDUCE).launch(math.ceil(m * n / REDUCE_THREADS), REDUCE_THREADS, ws.data_ptr(),
                                         bias_ptr, out.data_ptr(), m, n, out.stride(0), split,
                                         device=device_index)
