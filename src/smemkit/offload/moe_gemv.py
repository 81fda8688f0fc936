"""The routed-expert GEMV kernel (``moe_gemv.cu``): compiling it and launching one projection.

A MoE decode step's experts read only the experts their tokens are routed to. ``moe_gemv`` takes
a table of per-expert weight pointers (HBM, or device aliases of pinned host memory), the pairs'
expert ids, and computes every pair's ``W[e] x`` in one launch; an expert with no pair reads none
of its bytes. It serves up to ``MAX_PAIRS`` pairs (the decode sizes); more pairs go through the
experts module's per-expert loop. A CTA reads its weight tile once per ``PAIR_CHUNK`` (8) pairs
routed to its expert, so an expert with more than 8 pairs in a step streams its bytes more than
once (measured only at 2 pairs per expert: ``benchmarks/results/h200/moe_gemv.json``).
"""

from __future__ import annotations

import threading
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload.pinned import DTYPE_CODE, DTYPE_NAME
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, int_defines, package_source

SOURCE = "offload/moe_gemv.cu"
KERNEL = "moe_gemv"
KERNEL_PARAMS = ("ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "i32", "i32")
THREADS = 256
TILE_ROWS = 16
MAX_PAIRS = 1024
VEC = 8  # elements per 16-byte load: K must be a multiple of it
# CTAs that read host experts at once. Each has 8 warps x 2 rows x 512 B of loads in flight per
# k step; this many keeps tens of such CTAs on the host link, the split GEMV's measured regime
# (congestion.py). The benchmark's moe_host_ctas sweep is where a different figure would come from.
DEFAULT_HOST_CTAS = 32


@cache
def source() -> str:
    return package_source(SOURCE)


def source_constants(text: str | None = None) -> dict[str, int]:
    """``#define NAME <int>`` values of moe_gemv.cu (to check the mirrors above)."""
    text = source() if text is None else text
    return int_defines(text)


def defines(dtype: torch.dtype) -> dict[str, int]:
    if dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"moe_gemv dtype must be bfloat16 or float16, got {dtype}")
    return {"MOE_DTYPE": DTYPE_CODE[dtype]}


def variant_label(dtype: torch.dtype) -> str:
    return f"offload/moe_gemv.{DTYPE_NAME[dtype]}"


def compile_variant(dtype: torch.dtype, arch: str = DEFAULT_ARCH) -> CompiledModule:
    return compile_module(source(), variant_label(dtype), arch=arch, defines=defines(dtype))


_KERNELS: dict[torch.dtype, object] = {}
_LOCK = threading.Lock()


def _kernel(dtype: torch.dtype):
    from smemkit.runtime.launch import KernelModule

    with _LOCK:
        if dtype not in _KERNELS:
            module = KernelModule(source(), variant_label(dtype), defines(dtype))
            _KERNELS[dtype] = module.function(KERNEL, KERNEL_PARAMS)
        return _KERNELS[dtype]


def prepare(dtype: torch.dtype, device_index: int) -> None:
    """Compile and load the kernel on this GPU (before any graph capture)."""
    kern = _kernel(dtype)
    kern.module._load(kern.name, device_index)


def expert_pointers(hbm: torch.Tensor, host_view: torch.Tensor | None) -> torch.Tensor:
    """The ``w_ptrs`` table of :func:`expert_gemv`: the addresses of ``hbm``'s experts, then of
    ``host_view``'s (a device alias of pinned memory; None or empty for none), int64 on ``hbm``'s
    device."""
    ptrs = [int(hbm[e].data_ptr()) for e in range(hbm.shape[0])]
    if host_view is not None:
        ptrs += [int(host_view[e].data_ptr()) for e in range(host_view.shape[0])]
    return torch.tensor(ptrs, dtype=torch.int64, device=hbm.device)


def grid_size(n: int, num_experts: int, hbm_experts: int, host_ctas: int) -> int:
    """CTAs of one launch: ``host_ctas`` (when any expert is in host memory) + one per HBM item."""
    tiles = -(-n // TILE_ROWS)
    return (host_ctas if hbm_experts < num_experts else 0) + hbm_experts * tiles


def expert_gemv(w_ptrs: torch.Tensor, x: torch.Tensor, pair_expert: torch.Tensor, row_div: int, n: int,
                num_experts: int, hbm_experts: int, *, host_ctas: int = DEFAULT_HOST_CTAS,
                out: torch.Tensor | None = None) -> torch.Tensor:
    """``y[p] = W[pair_expert[p]] @ x[p // row_div]`` for every pair, ``W[e]`` the (n, K) matrix at
    ``w_ptrs[e]`` (int64 device addresses; experts ``>= hbm_experts`` are read by the host CTAs).

    ``x`` is (R, K) contiguous on the GPU, ``pair_expert`` (P,) int32 with values in
    ``[0, num_experts)`` (others match no expert: their rows of ``y`` are left unwritten).
    """
    if x.dim() != 2 or not x.is_cuda or not x.is_contiguous() or x.dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"x must be a contiguous 2-D bf16/fp16 CUDA tensor, got "
                                   f"{tuple(x.shape)} {x.dtype} on {x.device}")
    k = x.shape[1]
    if k % VEC or x.data_ptr() % 16:
        raise InvalidArgumentError(f"x has K = {k} columns at address {x.data_ptr():#x}; moe_gemv needs a "
                                   f"multiple of {VEC} and a 16-byte aligned start")
    if n < 1:
        raise InvalidArgumentError(f"n (output rows per expert) must be >= 1, got {n}")
    p = pair_expert.numel()
    if (pair_expert.dtype != torch.int32 or not pair_expert.is_contiguous()
            or pair_expert.device != x.device or not 1 <= p <= MAX_PAIRS):
        raise InvalidArgumentError(f"pair_expert must be a contiguous int32 tensor of 1..{MAX_PAIRS} pairs "
                                   f"on {x.device}, got {p} of {pair_expert.dtype} on {pair_expert.device}")
    if row_div < 1 or -(-p // row_div) > x.shape[0]:
        raise InvalidArgumentError(f"row_div = {row_div}: {p} pairs read rows up to "
                                   f"{(p - 1) // max(row_div, 1)} of x's {x.shape[0]}")
    if w_ptrs.dtype != torch.int64 or w_ptrs.numel() != num_experts or w_ptrs.device != x.device:
        raise InvalidArgumentError(f"w_ptrs must be {num_experts} int64 addresses on {x.device}")
    if not 0 <= hbm_experts <= num_experts or host_ctas < 1:
        raise InvalidArgumentError(f"hbm_experts = {hbm_experts} must be in [0, {num_experts}] and "
                                   f"host_ctas = {host_ctas} >= 1")
    if out is None:
        y = torch.empty((p, n), dtype=x.dtype, device=x.device)
    elif (tuple(out.shape) != (p, n) or out.dtype != x.dtype or out.device != x.device
          or not out.is_contiguous()):
        raise InvalidArgumentError(f"out must be a contiguous ({p}, {n}) {x.dtype} tensor on {x.device}, got "
                                   f"{tuple(out.shape)} {out.dtype} on {out.device}")
    else:
        y = out
    grid = grid_size(n, num_experts, hbm_experts, host_ctas)
    host = host_ctas if hbm_experts < num_experts else 0
    _kernel(x.dtype).launch(grid, THREADS, w_ptrs, x, pair_expert, y, row_div, p, n, k, num_experts,
                            hbm_experts, host, device=x.device.index)
    return y
