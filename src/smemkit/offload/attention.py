"""Split decode attention (``split_attention.cu``): a KV cache split along the batch between HBM
and pinned host memory, read by one flash-decoding kernel (DAK; issue 5 item 3).

Compiles for sm_90a without spills; planner and argument checks tested on the CPU, correctness,
determinism and CUDA-graph capture on the H200 (``tests/gpu/test_offload_attention_gpu.py``);
timings in ``benchmarks/results/h200/offload_attention.json`` (docs/offload.md). An all-HBM
cache without ``lengths`` runs torch's SDPA instead (:func:`uses_sdpa`).

``split_decode_attention(q, cache, lengths)`` computes, for one query token per sequence,
``o[b, h] = softmax(scale * q[b, h] . K[b, h // G]^T) . V[b, h // G]`` over the first
``lengths[b]`` tokens, where ``cache`` is a :class:`SplitKVCache`: sequences ``[0, b_hbm)`` in
HBM, ``[b_hbm, B)`` in exact-size pinned host memory read in place through its mapped pointer.
``host_ctas`` CTAs read the host sequences, each with at most ``host_window`` bytes in flight; the
others read HBM. The context is split into chunks across CTAs and the partials are merged in a
fixed order (bitwise reproducible).

The launch plan (the kernel's constants, :func:`plan_attention`) is pure Python in
:mod:`.attention_plan`, whose names this module re-exports.
"""

from __future__ import annotations

import math
import threading
from functools import cache

import torch

from smemkit.errors import InvalidArgumentError, is_int
from smemkit.offload.attention_plan import (  # noqa: F401 (re-exported: the plan's names as att.X)
    CHUNK_MULTIPLE,
    GROUP_TILES,
    HBM_CTA_IN_FLIGHT,
    HEAD_DIM,
    HOST_WARPS_MAX,
    HOST_WINDOW,
    HOST_WINDOW_UNIT,
    MAX_GROUP,
    MIN_CTAS_PER_SM,
    PARTIAL_FLOATS,
    THREADS,
    TILE_T,
    WARP_TILE_BYTES,
    WARPS,
    AttentionPlan,
    chunks_for,
    group_tile,
    host_seqs_for_ratio,
    host_warps_for_window,
    kernel_name,
    plan_attention,
    unit_coverage,
    window_to_host_warps,
)
from smemkit.offload.congestion import resolve_host_config
from smemkit.offload.pinned import (
    DTYPE_CODE,
    DTYPE_NAME,
    PinnedBuffer,
    _device_index,
    check_half_tensor,
    check_pinned_request,
    dtype_name,
)
from smemkit.offload.scratch import SplitScratch
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, int_defines, package_source

SOURCE = "offload/split_attention.cu"
KERNEL_PARAMS = ("ptr",) * 9 + ("i32",) * 12 + ("f32",)
LOG2E = 1.4426950408889634


# ---- compiling ------------------------------------------------------------------------------------

@cache
def source() -> str:
    return package_source(SOURCE)


def defines(dtype: torch.dtype) -> dict[str, int]:
    if dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"attention kernel dtype must be bfloat16 or float16, got {dtype}")
    return {"ATT_DTYPE": DTYPE_CODE[dtype]}


def variant_label(dtype: torch.dtype) -> str:
    return f"offload/split_attention.{DTYPE_NAME[dtype]}"


def compile_variant(dtype: torch.dtype, arch: str = DEFAULT_ARCH) -> CompiledModule:
    """The module for one dtype (all four group-size kernels), compiled for ``arch``."""
    return compile_module(source(), variant_label(dtype), arch=arch, defines=defines(dtype))


def shipped_variants() -> list[torch.dtype]:
    return [torch.bfloat16, torch.float16]


def source_constants(text: str | None = None) -> dict[str, int]:
    text = source() if text is None else text
    return int_defines(text)


# ---- argument checks (no GPU needed) ------------------------------------------------------------

def check_kv(k: object, v: object) -> tuple[int, int, int, int]:
    """K and V of a cache: equal (B, H_kv, L, 128) bf16/fp16 tensors; returns (B, H_kv, L, d)."""
    for name, t in (("k", k), ("v", v)):
        check_half_tensor(name, t, 4, "batch, kv_heads, seq_len, head_dim")
    if k.shape != v.shape:
        raise InvalidArgumentError(
            f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
    if k.dtype != v.dtype:
        raise InvalidArgumentError(f"k and v must have the same dtype, got {dtype_name(k.dtype)} and "
                                   f"{dtype_name(v.dtype)}")
    b, h_kv, seq_len, d = (int(s) for s in k.shape)
    if d != HEAD_DIM:
        raise InvalidArgumentError(
            f"head_dim = {d}: the split attention kernel supports head_dim = {HEAD_DIM} only")
    if b < 1 or h_kv < 1 or seq_len < 1:
        raise InvalidArgumentError(f"the KV cache must not be empty, got shape {tuple(k.shape)}")
    return b, h_kv, seq_len, d


def check_attention_args(q: object, cache: object, lengths: object = None, scale: object = None,
                         out: object = None) -> tuple[int, int, int]:
    """Argument checks of :func:`split_decode_attention`, in the order dtype, shape, contiguity,
    device (so all but the device check run without a GPU); returns (B, H_q, G).

    ``cache`` needs ``shape`` (B, H_kv, L, d), ``dtype`` and ``device`` (a SplitKVCache).
    """
    shape = getattr(cache, "shape", None)
    if shape is None or not hasattr(cache, "b_hbm"):
        raise InvalidArgumentError(f"cache must be a SplitKVCache, got {type(cache).__name__}")
    b, h_kv, seq_len, d = shape
    if d != HEAD_DIM:
        raise InvalidArgumentError(f"head_dim = {d}: only {HEAD_DIM} is supported")
    if not isinstance(q, torch.Tensor):
        raise InvalidArgumentError(f"q must be a torch.Tensor, got {type(q).__name__}")
    if q.dtype != cache.dtype:
        raise InvalidArgumentError(f"q has dtype {dtype_name(q.dtype)} but the cache holds "
                                   f"{dtype_name(cache.dtype)}")
    if q.dim() != 3 or q.shape[0] != b or q.shape[2] != d:
        raise InvalidArgumentError(f"q must have shape ({b}, num_heads, {d}) (one query token per sequence), "
                                   f"got {tuple(q.shape)}")
    h_q = int(q.shape[1])
    if h_q < 1 or h_q % h_kv:
        raise InvalidArgumentError(f"q has {h_q} heads: must be a positive multiple of the cache's {h_kv} "
                                   "KV heads (GQA)")
    group = h_q // h_kv
    if group > MAX_GROUP:
        raise InvalidArgumentError(
            f"{group} query heads per KV head: the kernel supports at most {MAX_GROUP}")
    if lengths is not None:
        if not isinstance(lengths, torch.Tensor):
            raise InvalidArgumentError(
                f"lengths must be a torch.Tensor of int32, got {type(lengths).__name__}")
        if lengths.dtype != torch.int32:
            raise InvalidArgumentError(f"lengths has dtype {dtype_name(lengths.dtype)}; allowed: int32")
        if tuple(lengths.shape) != (b,):
            raise InvalidArgumentError(f"lengths must have shape ({b},), got {tuple(lengths.shape)}")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))
                              or not math.isfinite(scale)):
        raise InvalidArgumentError(f"scale must be a finite number, got {scale!r}")
    if out is not None and (not isinstance(out, torch.Tensor) or out.dtype != q.dtype
                            or tuple(out.shape) != tuple(q.shape)):
        raise InvalidArgumentError(f"out must be a {dtype_name(q.dtype)} tensor of shape {tuple(q.shape)}")
    for name, t in (("q", q), ("lengths", lengths), ("out", out)):
        if t is not None and not t.is_contiguous():
            raise InvalidArgumentError(f"{name} must be contiguous (strides {t.stride()} for shape "
                                       f"{tuple(t.shape)}); call .contiguous() first")
    for name, t in (("q", q), ("lengths", lengths), ("out", out)):
        if t is None:
            continue
        if not t.is_cuda:
            raise InvalidArgumentError(f"{name} must be on a CUDA device, got device {t.device}")
        if t.device != cache.device:
            raise InvalidArgumentError(f"{name} is on {t.device} but the cache is on {cache.device}")
        if t.numel() and t.data_ptr() % (16 if name != "lengths" else 4):
            raise InvalidArgumentError(f"{name}'s data pointer is not aligned (offset view?); call .clone()")
    return b, h_q, group


# ---- the cache ------------------------------------------------------------------------------------

class SplitKVCache:
    """A decode KV cache of shape (B, H_kv, L, 128), bf16/fp16, split along the batch: sequences
    ``[0, b_hbm)`` in HBM (``.k_hbm``, ``.v_hbm``), the last ``host_seqs`` in one exact-size pinned
    host allocation (``.k_host``, ``.v_host``: CPU tensor views; ``.k_host_ptr``/``.v_host_ptr`` the
    addresses kernels read). ``ratio`` is the requested host fraction; the realised one
    (``.ratio``) is ``host_seqs / B`` (:func:`host_seqs_for_ratio`).

    Build it from dense K and V (any device; copied) or with :meth:`empty`. Arguments are checked
    and the pinned memory allocated before anything is copied or any device memory taken.
    """

    def __init__(self, k: torch.Tensor, v: torch.Tensor, ratio: float, *,
                 device: int | torch.device | None = None) -> None:
        b, h_kv, seq_len, d = check_kv(k, v)
        self._init(b, h_kv, seq_len, k.dtype, ratio, k.device if device is None and k.is_cuda else device)
        with torch.no_grad():
            self.k_hbm.copy_(k[: self.b_hbm])
            self.v_hbm.copy_(v[: self.b_hbm])
            if self.host_seqs:
                self.k_host.copy_(k[self.b_hbm:])
                self.v_host.copy_(v[self.b_hbm:])
        if k.is_cuda:
            torch.cuda.synchronize(k.device)

    @classmethod
    def empty(cls, batch: int, kv_heads: int, seq_len: int, dtype: torch.dtype, ratio: float, *,
              head_dim: int = HEAD_DIM, device: int | torch.device | None = None) -> SplitKVCache:
        """An uninitialised cache (fill it through ``k_hbm``/``v_hbm``/``k_host``/``v_host``)."""
        meta = torch.empty((batch, kv_heads, seq_len, head_dim), dtype=dtype, device="meta")
        check_kv(meta, meta)
        obj = cls.__new__(cls)
        obj._init(batch, kv_heads, seq_len, dtype, ratio, device)
        return obj

    def _init(self, b: int, h_kv: int, seq_len: int, dtype: torch.dtype, ratio: float, device) -> None:
        self.host_seqs = host_seqs_for_ratio(b, ratio)
        self.requested_ratio = float(ratio)
        self.shape = (b, h_kv, seq_len, HEAD_DIM)
        self.dtype = dtype
        per_seq = h_kv * seq_len * HEAD_DIM * 2
        check_pinned_request(2 * self.host_seqs * per_seq,
                             f"host part of a {self.shape} KV cache at ratio {ratio}")
        index = _device_index(device)
        self.device = torch.device("cuda", index)
        # host memory first: failing here leaves the device untouched
        self._buffer = PinnedBuffer(2 * self.host_seqs * per_seq, device=index)
        host_shape = (self.host_seqs, h_kv, seq_len, HEAD_DIM)
        if self.host_seqs:
            both = self._buffer.tensor(dtype, (2, *host_shape))
            self.k_host, self.v_host = both[0], both[1]
        else:
            self.k_host = self.v_host = torch.empty(host_shape, dtype=dtype)
        hbm_shape = (self.b_hbm, h_kv, seq_len, HEAD_DIM)
        self.k_hbm = torch.empty(hbm_shape, dtype=dtype, device=self.device)
        self.v_hbm = torch.empty(hbm_shape, dtype=dtype, device=self.device)

    @property
    def b_hbm(self) -> int:
        return self.shape[0] - self.host_seqs

    @property
    def ratio(self) -> float:
        return self.host_seqs / self.shape[0]

    @property
    def nbytes(self) -> int:
        return 2 * math.prod(self.shape) * 2

    @property
    def freed(self) -> bool:
        # its own flag: a cache with no host sequences has an empty buffer that never reads freed
        return getattr(self, "_freed", False) or self._buffer.freed

    def _host_ptrs(self) -> tuple[int, int]:
        if self.host_seqs == 0:
            return 0, 0
        if self._buffer.freed:
            raise InvalidArgumentError("this SplitKVCache was freed")
        half = self._buffer.nbytes // 2
        return self._buffer.device_ptr, self._buffer.device_ptr + half

    @property
    def k_host_ptr(self) -> int:
        return self._host_ptrs()[0]

    @property
    def v_host_ptr(self) -> int:
        return self._host_ptrs()[1]

    def host_cuda_views(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The host K and V as CUDA tensors aliasing the pinned memory (UVA zero-copy reads)."""
        shape = (self.host_seqs, *self.shape[1:])
        if self.host_seqs == 0:
            e = torch.empty(shape, dtype=self.dtype, device=self.device)
            return e, e
        both = self._buffer.cuda_view(self.dtype, (2, *shape))
        return both[0], both[1]

    def to_dense(self) -> tuple[torch.Tensor, torch.Tensor]:
        """K and V as CUDA tensors (copies)."""
        out = []
        for hbm, host in ((self.k_hbm, self.k_host), (self.v_hbm, self.v_host)):
            full = torch.empty(self.shape, dtype=self.dtype, device=self.device)
            full[: self.b_hbm].copy_(hbm)
            if self.host_seqs:
                full[self.b_hbm:].copy_(host)
            out.append(full)
        return out[0], out[1]

    def prepare(self, num_q_heads: int, *, host_ctas: int | None = None, host_window: int | None = None,
                scratch: SplitScratch | None = None) -> AttentionPlan:
        """Load the kernel and reserve the workspace a call with ``num_q_heads`` heads needs, so a
        later call allocates only its output (CUDA-graph capture). Returns the plan."""
        if not is_int(num_q_heads) or num_q_heads < 1 or num_q_heads % self.shape[1]:
            raise InvalidArgumentError(f"num_q_heads must be a positive multiple of {self.shape[1]}, "
                                       f"got {num_q_heads!r}")
        group = num_q_heads // self.shape[1]
        hc, hw = _host_config(host_ctas, host_window, self.device.index)
        plan = _plan_for(self, group, hc, hw)
        (scratch or default_scratch(self.device.index)).reserve(plan.ws_floats, plan.n_counters)
        return plan

    def free(self) -> None:
        """Release the pinned part now (and drop the HBM part). Idempotent."""
        self._freed = True
        self._buffer.free()
        shape = (0, *self.shape[1:])
        self.k_host = self.v_host = torch.empty(shape, dtype=self.dtype)
        self.k_hbm = self.v_hbm = torch.empty(shape, dtype=self.dtype, device=self.device)

    def __enter__(self) -> SplitKVCache:
        return self

    def __exit__(self, *exc) -> None:
        self.free()

    def __repr__(self) -> str:
        return (f"SplitKVCache({self.shape} {dtype_name(self.dtype)}, ratio {self.ratio:.4f} "
                f"(asked {self.requested_ratio:g}): {self.b_hbm} sequences in HBM, {self.host_seqs} pinned)")


# ---- the GPU side -------------------------------------------------------------------------------

_MODULES: dict[torch.dtype, tuple[object, dict]] = {}
_MODULES_LOCK = threading.Lock()


def _kernel(dtype: torch.dtype, gt: int):
    from smemkit.runtime.launch import KernelModule

    with _MODULES_LOCK:
        if dtype not in _MODULES:
            _MODULES[dtype] = (KernelModule(source(), variant_label(dtype), defines(dtype)), {})
        module, kernels = _MODULES[dtype]
        if gt not in kernels:
            kernels[gt] = module.function(kernel_name(gt), KERNEL_PARAMS)
        return kernels[gt]


@cache
def _slots(dtype: torch.dtype, gt: int, device_index: int) -> int:
    with torch.cuda.device(device_index):
        return _kernel(dtype, gt).max_active_ctas(THREADS, 0)


_SCRATCH: dict[int, SplitScratch] = {}


def default_scratch(device_index: int) -> SplitScratch:
    """The attention kernels' workspace and counters on one device (separate from the GEMV's)."""
    if device_index not in _SCRATCH:
        _SCRATCH[device_index] = SplitScratch(device_index)
    return _SCRATCH[device_index]


def _host_config(host_ctas: int | None, host_window: int | None, device_index: int) -> tuple[int, int]:
    return resolve_host_config(host_ctas, host_window, device_index, HOST_WINDOW)


def _plan_for(cache: SplitKVCache, group: int, host_ctas: int, host_warps: int, chunks_g: int | None = None,
              chunks_h: int | None = None) -> AttentionPlan:
    b, h_kv, seq_len, _ = cache.shape
    gt = group_tile(group)
    slots = _slots(cache.dtype, gt, cache.device.index)
    return plan_attention(b, h_kv, group, seq_len, cache.b_hbm, slots=slots, host_ctas=host_ctas,
                          host_warps=host_warps, chunks_g=chunks_g, chunks_h=chunks_h)


def _ptr(t: torch.Tensor | None) -> int:
    return 0 if t is None or t.numel() == 0 else int(t.data_ptr())


def uses_sdpa(cache: SplitKVCache, lengths: torch.Tensor | None, force_kernel: bool = False) -> bool:
    """Whether ``split_decode_attention`` hands the call to torch SDPA: every sequence in HBM,
    every slot attended to, the kernel not forced."""
    return cache.b_hbm == cache.shape[0] and lengths is None and not force_kernel


def split_decode_attention(q: torch.Tensor, cache: SplitKVCache, lengths: torch.Tensor | None = None, *,
                           scale: float | None = None, host_ctas: int | None = None,
                           host_window: int | None = None, out: torch.Tensor | None = None,
                           scratch: SplitScratch | None = None, chunks_g: int | None = None,
                           chunks_h: int | None = None, force_kernel: bool = False) -> torch.Tensor:
    """Decode attention of one query token per sequence over a :class:`SplitKVCache`, in one kernel.

    ``q``: (B, H_q, 128) CUDA tensor in the cache's dtype, H_q a multiple of the cache's KV heads
    (at most 8 query heads per KV head). ``lengths``: (B,) int32 CUDA tensor, tokens of each
    sequence to attend to (values are clamped to [0, L] on the device; 0 gives a zero output);
    None means every sequence has L. ``scale`` defaults to 1/sqrt(128). ``host_ctas`` /
    ``host_window``: CTAs reading the host sequences and bytes in flight per such CTA (8192,
    16384, 24576 or 32768); default: the device profile's congestion choice, else 8 x 16 KB.
    ``chunks_g`` / ``chunks_h`` force each tier's context split (tests). Returns (B, H_q, 128).

    Allocates only the output (and, the first time, the workspace: call ``cache.prepare`` before a
    CUDA graph capture).

    A cache with every sequence in HBM (ratio 0) and no ``lengths`` has nothing to split: it runs
    as torch's ``scaled_dot_product_attention`` (GQA), faster there than the split kernel's HBM
    path (offload_attention.json, r = 0). ``force_kernel=True`` or ``chunks_g``/``chunks_h`` run
    the split kernel anyway.
    """
    b, h_q, group = check_attention_args(q, cache, lengths, scale, out)
    from smemkit.runtime.device import require_gpu

    require_gpu()
    if cache.freed:
        raise InvalidArgumentError("the SplitKVCache was freed")
    device_index = cache.device.index
    hc, hw = _host_config(host_ctas, host_window, device_index)  # checked on every path
    if uses_sdpa(cache, lengths, force_kernel or chunks_g is not None or chunks_h is not None):
        o = torch.nn.functional.scaled_dot_product_attention(
            q.unsqueeze(2), cache.k_hbm, cache.v_hbm, scale=scale, enable_gqa=True).squeeze(2)
        return out.copy_(o) if out is not None else o
    plan = _plan_for(cache, group, hc, hw, chunks_g, chunks_h)
    ws, counters = (scratch or default_scratch(device_index)).reserve(plan.ws_floats, plan.n_counters)
    y = out if out is not None else torch.empty_like(q)
    _, h_kv, seq_len, _ = cache.shape
    scale_log2 = (HEAD_DIM ** -0.5 if scale is None else float(scale)) * LOG2E
    k_host, v_host = cache._host_ptrs()
    _kernel(cache.dtype, plan.gt).launch(
        plan.grid, THREADS, _ptr(q), _ptr(cache.k_hbm), _ptr(cache.v_hbm), k_host, v_host, _ptr(lengths),
        _ptr(y), _ptr(ws), _ptr(counters), b, h_kv, group, seq_len, cache.b_hbm, *plan.kernel_args(),
        scale_log2, device=device_index)
    return y


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                        lengths: torch.Tensor | None = None, scale: float | None = None,
                        dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """Plain torch decode attention in ``dtype`` (float64 by default): q (B, H_q, d), k/v
    (B, H_kv, L, d), GQA without repeating K/V (query head h reads KV head h // G); tokens
    >= lengths[b] masked; a length of 0 gives 0."""
    b, h_q, d = q.shape
    h_kv, seq_len = k.shape[1], k.shape[2]
    group = h_q // h_kv
    scale = d ** -0.5 if scale is None else scale
    qq = q.to(dtype).reshape(b, h_kv, group, d)
    s = torch.einsum("bkgd,bktd->bkgt", qq, k.to(dtype)) * scale
    if lengths is not None:
        pos = torch.arange(seq_len, device=k.device)
        mask = pos[None, :] >= lengths.to(k.device).long().clamp(0, seq_len)[:, None]
        s = s.masked_fill(mask[:, None, None, :], float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return torch.einsum("bkgt,bktd->bkgd", p, v.to(dtype)).reshape(b, h_q, d)
