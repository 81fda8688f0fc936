"""Large-batch split linear with DAK's direct-access GEMM: the host rows multiplied by a kernel that
reads them itself (TMA tensor copies from pinned memory into shared memory, multicast across a
cluster of P CTAs), beside cuBLAS on the HBM rows (``direct_gemm.cu``; seed 003 §4.2, §4.3.2).

``split_linear(..., path="direct")`` runs it; ``path="auto"`` never does, by measurement on the
H200 at batch 512 (commit 84d716e): the kernel alone streams a 16.5-47 MB host part at 42.8-50.4 GB/s
(P = 4, 16-32 CTAs), below the copy engine's 55.0-55.5, and beside cuBLAS its CTAs hold 16-32 SMs of
a compute-bound GEMM for the whole host stream, so the ring path (:mod:`.ring_gemm`, copy engine +
cuBLAS) was faster at every measured point (28672 x 8192: r_hide 397 against 349 us, r = 0.05 476
against 459; 4096 x 14336 r* 123 against 89). Multicast itself pays: at batch 512 (4 m-blocks of
128 rows) P = 4 read a 23.6 MB host part in 475 us against 938 (P = 2) and 1851 (P = 1), which read
it 2 and 4 times.

The host rows' kernel is enqueued first on the device's side stream, so that its CTAs (one per SM:
9 warps and stages x 32 KB of shared memory) hold their SMs from the start; cuBLAS multiplies the
HBM rows on the caller's stream. No HBM staging buffer; the bytes of host reads in flight are stages x 16 KB
per cluster.

Plan: the host part is cut into tiles of 128 rows; each tile's K is split so that the unit streams
(clusters) of an m-group get at least ``UNITS_PER_STREAM`` units each (a unit is one tile x one
k-split); the partials are summed in split order by the last CTA (bitwise reproducible).
"""

from __future__ import annotations

import math
import struct
import threading
from dataclasses import asdict, dataclass
from functools import cache, lru_cache

import torch

from smemkit.errors import InvalidArgumentError, is_int
from smemkit.offload.pinned import DTYPE_CODE, SplitWeight
from smemkit.offload.ring_gemm import linear_into
from smemkit.offload.scratch import SplitScratch
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, package_source
from smemkit.runtime.tma import TENSOR_MAP_BYTES, encode_2d, to_device

SOURCE = "offload/direct_gemm.cu"
KERNEL = "direct_gemm"
PARAMS = ("ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "i32", "i32", "i32",
          "i32", "i32") + ("u64",) * 16  # ... then the x tensor map's 128 bytes
BM = BN = 128  # x rows per CTA, host rows per tile
BK = 64  # k per stage (128-byte rows: the 128-byte swizzle)
THREADS = 288  # 8 math warps + 1 producer warp
MAX_STAGES = 6
SLOT_BYTES = 32 << 10  # x tile + weight tile
CLUSTER_SIZES = (1, 2, 4)
DEFAULT_STREAMS = 6  # clusters per m-group: the probe's clusters of 4 read ~12-13 GB/s each (commit 84d716e)
DEFAULT_STAGES = 6
UNITS_PER_STREAM = 2
BOX_ROWS = (64, 16)  # main and remainder boxes (32-row boxes read 29-32 GB/s, 64-row 51: commit 84d716e)


@dataclass(frozen=True)
class DirectPlan:
    """One launch: clusters of P CTAs, ``m_groups`` of them per stream of units, the k-split."""

    P: int
    clusters: int
    m_groups: int
    split: int
    cps: int
    stages: int
    tiles: int

    @property
    def ctas(self) -> int:
        return self.P * self.clusters

    @property
    def smem(self) -> int:
        return self.stages * SLOT_BYTES + 1024

    def ws_floats(self, m: int, n_h: int) -> int:
        return self.split * m * n_h if self.split > 1 else 0

    @property
    def n_counters(self) -> int:
        return self.m_groups * self.P * self.tiles if self.split > 1 else 0

    def as_dict(self) -> dict:
        return asdict(self) | {"ctas": self.ctas, "smem": self.smem}


def default_cluster_size(m: int) -> int:
    """The largest cluster size (1, 2, 4) not above the input's 128-row m-blocks (at M = 384, two
    clusters of 2 leave one CTA without rows: it only frees its slots)."""
    blocks = math.ceil(m / BM)
    return max(p for p in CLUSTER_SIZES if p <= blocks)


def plan_direct(m: int, n_h: int, k: int, *, P: int | None = None, streams: int = DEFAULT_STREAMS,
                stages: int = DEFAULT_STAGES, split: int | None = None) -> DirectPlan:
    """The launch for M x K inputs and n_h host rows: clusters of P CTAs (default
    :func:`default_cluster_size`), ``streams`` clusters per m-group, each unit stream given at least
    UNITS_PER_STREAM units by splitting K (unless ``split`` is given)."""
    for name, v in (("m", m), ("n_h", n_h), ("k", k)):
        if not is_int(v) or v < 1:
            raise InvalidArgumentError(f"{name} must be a positive integer, got {v!r}")
    P = default_cluster_size(m) if P is None else P
    if not is_int(P) or P not in CLUSTER_SIZES:
        raise InvalidArgumentError(f"P (cluster size) must be one of {CLUSTER_SIZES}, got {P!r}")
    if not is_int(stages) or not 1 <= stages <= MAX_STAGES:
        raise InvalidArgumentError(f"stages must be an integer in 1..{MAX_STAGES}, got {stages!r}")
    if not is_int(streams) or streams < 1:
        raise InvalidArgumentError(f"streams must be a positive integer, got {streams!r}")
    tiles = math.ceil(n_h / BN)
    kchunks = math.ceil(k / BK)
    if split is None:
        split = min(kchunks, max(1, math.ceil(UNITS_PER_STREAM * streams / tiles)))
    if not is_int(split) or not 1 <= split <= kchunks:
        raise InvalidArgumentError(f"split must be an integer in 1..{kchunks} (k-chunks of {BK}), "
                                   f"got {split!r}")
    cps = math.ceil(kchunks / split)
    split = math.ceil(kchunks / cps)  # no empty k-split
    m_groups = math.ceil(math.ceil(m / BM) / P)
    streams = min(streams, tiles * split)  # no idle cluster
    return DirectPlan(P, streams * m_groups, m_groups, split, cps, stages, tiles)


def check_plan(plan: DirectPlan, m: int, n_h: int, k: int) -> None:
    """A plan given to the launchers must be one :func:`plan_direct` makes for this shape (the
    kernel trusts its fields: barriers per stage, counters per tile and m-block)."""
    if not isinstance(plan, DirectPlan):
        raise InvalidArgumentError(f"plan must be a DirectPlan, got {type(plan).__name__}")
    made = plan_direct(m, n_h, k, P=plan.P, streams=plan.clusters // max(1, plan.m_groups),
                       stages=plan.stages, split=plan.split)
    if made != plan:
        raise InvalidArgumentError(f"plan {plan} does not fit M = {m}, host rows = {n_h}, K = {k} "
                                   f"(plan_direct makes {made})")


@cache
def source() -> str:
    return package_source(SOURCE)


def variant_label(dtype: torch.dtype) -> str:
    return f"offload/direct_gemm.{'bf16' if dtype == torch.bfloat16 else 'fp16'}"


def defines(dtype: torch.dtype) -> dict[str, int]:
    if dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"direct GEMM dtype must be bfloat16 or float16, got {dtype}")
    return {"DG_DTYPE": DTYPE_CODE[dtype]}


def compile_variant(dtype: torch.dtype, arch: str = DEFAULT_ARCH) -> CompiledModule:
    return compile_module(source(), variant_label(dtype), arch=arch, defines=defines(dtype))


_KERNELS: dict[torch.dtype, object] = {}
_MAPS: dict[tuple[int, int, int, int, torch.dtype], torch.Tensor] = {}
_SCRATCH: dict[int, DirectScratch] = {}
_LOCK = threading.Lock()


def _kernel(dtype: torch.dtype):
    from smemkit.runtime.launch import KernelModule

    with _LOCK:
        if dtype not in _KERNELS:
            module = KernelModule(source(), variant_label(dtype), defines(dtype))
            _KERNELS[dtype] = module.function(KERNEL, PARAMS)
        return _KERNELS[dtype]


def _maps_key(weight: SplitWeight) -> tuple[int, int, int, int, torch.dtype]:
    return (weight.device.index, int(weight.host_ptr), weight.host_rows, weight.shape[1], weight.dtype)


def host_tensor_maps(weight: SplitWeight) -> torch.Tensor:
    """The two tensor maps (2 x 128 bytes in device memory) of the weight's host rows, boxes of
    BOX_ROWS rows; made once per host part (a map holds only the address and the shape, so one
    made for a freed part is right for a new part of the same shape at the same address)."""
    key = _maps_key(weight)
    with _LOCK:
        if key in _MAPS:
            return _MAPS[key]
    n_h, k = weight.host_rows, weight.shape[1]
    dev = to_device(b"".join(encode_2d(int(weight.host_ptr), n_h, k, rows, BK, weight.dtype)
                             for rows in BOX_ROWS), weight.device)
    with _LOCK:
        return _MAPS.setdefault(key, dev)


@lru_cache(maxsize=1024)
def input_map_words(ptr: int, m: int, k: int, dtype: torch.dtype) -> tuple[int, ...]:
    """The x tensor map (box 64 k x BM rows) as the 16 u64 kernel parameters the kernel copies to
    its per-CTA slot."""
    return struct.unpack("<16Q", encode_2d(ptr, m, k, BM, BK, dtype))


class DirectScratch:
    """Split-K partials and counters (a :class:`~smemkit.offload.scratch.SplitScratch`) and the
    per-CTA x map slots of one device's direct kernels. Eager calls run them on the device's side
    stream, one after another; a captured CUDA graph holds these buffers too, so graphs that ran the
    direct path must be replayed one at a time and not beside an eager direct call (as the ring's
    slots, :mod:`.ring_gemm`). Buffers only grow (outgrown ones are kept: a graph may still use
    them), never inside a capture: the counters must be zero before a graph's first replay, and a
    capture's allocations would come from that graph's pool."""

    def __init__(self, device_index: int) -> None:
        self.split = SplitScratch(device_index)
        self.device_index = device_index
        self.maps: torch.Tensor | None = None
        self._retired: list[torch.Tensor] = []

    def reserve(self, plan: DirectPlan, m: int, n_h: int) -> tuple[torch.Tensor | None, torch.Tensor | None,
                                                                  torch.Tensor]:
        """(partials, counters, map slots) for a launch of ``plan``."""
        ws_floats, n_counters = plan.ws_floats(m, n_h), plan.n_counters
        map_bytes = plan.ctas * TENSOR_MAP_BYTES
        maps_short = self.maps is None or self.maps.numel() < map_bytes
        grow = maps_short or self.split.needs_growth(ws_floats, n_counters)
        if grow and torch.cuda.is_current_stream_capturing():
            raise InvalidArgumentError(
                "the direct path's scratch must grow for this launch, which a CUDA-graph capture cannot do "
                "safely: run the same call once outside the capture first")
        ws, counters = self.split.reserve(ws_floats, n_counters)
        if maps_short:
            if self.maps is not None:
                self._retired.append(self.maps)
            self.maps = torch.empty(map_bytes, dtype=torch.uint8,
                                    device=torch.device("cuda", self.device_index))
        return ws, counters, self.maps


def device_scratch(device: torch.device) -> DirectScratch:
    """The direct kernels' scratch on ``device``."""
    with _LOCK:
        return _SCRATCH.setdefault(device.index, DirectScratch(device.index))


def check_direct(x2: torch.Tensor, weight: SplitWeight) -> None:
    """What the direct kernel needs beyond split_linear's checks: a GPU with tensor copies and
    clusters (sm_90+) and a contiguous input (the tensor maps' 16-byte rows hold already: a
    SplitWeight's K is a multiple of 8)."""
    from smemkit.runtime.device import require_sm90

    require_sm90(x2.device.index, "the direct path (TMA tensor copies, cluster multicast)",
                 "; use path='ring'")
    if not x2.is_contiguous():
        raise InvalidArgumentError("the direct path needs a contiguous input")
    if x2.data_ptr() % 16:
        raise InvalidArgumentError("the direct path needs the input's start 16-byte aligned (a tensor "
                                   "copy's base address); got an offset view: pass a copy")


def _launch_host_rows(x2: torch.Tensor, weight: SplitWeight, bias: torch.Tensor | None, y2: torch.Tensor,
                     plan: DirectPlan | None = None) -> DirectPlan:
    """Output columns [n_hbm, N) = x2 @ W_host.T (+ bias) by the direct kernel, on the current
    stream (the weight has host rows; :func:`direct_linear` ran :func:`check_direct`). Returns the
    plan it ran."""
    m, k = x2.shape
    n_h = weight.host_rows
    if plan is None:
        plan = plan_direct(m, n_h, k)
    else:
        check_plan(plan, m, n_h, k)
    dev = x2.device.index
    made = _maps_key(weight) in _MAPS and x2.dtype in _KERNELS
    if not made and torch.cuda.is_current_stream_capturing():  # an upload or a module load can't be captured
        raise InvalidArgumentError(
            "the direct path's kernel or this weight's tensor maps are not made yet, which a CUDA-graph "
            "capture cannot do: run the same call once outside the capture first")
    ws, counters, xmaps = device_scratch(x2.device).reserve(plan, m, n_h)
    _kernel(x2.dtype).launch(
        plan.ctas, THREADS, host_tensor_maps(weight), xmaps, 0 if bias is None else bias, y2,
        0 if ws is None else ws, 0 if counters is None else counters, m, k, weight.shape[0], weight.n_hbm,
        n_h, plan.split, plan.cps, plan.m_groups, plan.stages,
        *input_map_words(x2.data_ptr(), m, k, x2.dtype), smem=plan.smem, cluster=plan.P, device=dev)
    return plan


_SIDE: dict[int, tuple[torch.cuda.Stream, threading.Lock]] = {}


def _side_stream(device: torch.device) -> tuple[torch.cuda.Stream, threading.Lock]:
    """The device's side stream for the direct kernels (so they run one after another and share
    one scratch), and the lock keeping one call's enqueues together. While a CUDA-graph capture
    runs the direct path, this stream belongs to that capture: no eager direct call on the device
    until it ends."""
    with _LOCK:
        if device.index not in _SIDE:
            _SIDE[device.index] = (torch.cuda.Stream(device=device), threading.Lock())
        return _SIDE[device.index]


def direct_linear(x2: torch.Tensor, weight: SplitWeight, bias: torch.Tensor | None, y2: torch.Tensor,
                  plan: DirectPlan | None = None) -> None:
    """``y2 = x2 @ W.T (+ bias)`` for a 2-D input: the host rows by the direct kernel on the
    device's side stream, enqueued first so that its CTAs hold their SMs, the HBM rows by cuBLAS on
    the caller's stream. Stream order is expressed by waits within the call, so it can be captured
    in a CUDA graph; run the same call once outside the capture first (the kernel, its tensor maps
    and its scratch are made then; a capture that would have to make them raises). Arguments are
    already checked by ``split_linear``."""
    n_hbm = weight.n_hbm
    main = torch.cuda.current_stream(x2.device)
    if not weight.host_rows:
        linear_into(x2, weight.hbm, bias, y2)
        return
    check_direct(x2, weight)
    side, lock = _side_stream(x2.device)
    with lock:
        side.wait_stream(main)
        try:
            with torch.cuda.stream(side):
                _launch_host_rows(x2, weight, bias, y2, plan)
            if n_hbm:
                linear_into(x2, weight.hbm, None if bias is None else bias[:n_hbm], y2[:, :n_hbm])
        finally:
            main.wait_stream(side)  # also when an enqueue raised: a capture must end joined
