"""The split GEMV / skinny GEMM for decode (``split_gemv.cu``): launch planning, the op, the module.

``split_linear(x, w)`` computes ``x @ W.T (+ bias)`` for a :class:`~smemkit.offload.pinned.SplitWeight`
``W`` whose last rows live in pinned host memory, in one kernel: ``host_ctas`` CTAs stream the host
rows (each with at most ``host_window`` bytes of host reads in flight), the others stream the HBM
rows. Inputs of up to 64 rows run in one launch; longer inputs run in chunks of 64 rows (each
chunk reads the whole weight again: this is the decode kernel, not the large-batch GEMM).

Everything above :class:`SplitScratch` is pure Python (tested without a GPU): the constants the
kernel is built with, and :func:`plan_launch`, which turns a shape and a host configuration into
a grid, a k-split per tier and the workspace it needs. The split is chosen so that every CTA of a
tier gets the same number of units (no wave-quantization tail) at the least modelled cost.

:class:`OffloadedLinear` is a drop-in for ``nn.Linear`` (bias supported) holding its weight as a
``SplitWeight``. Its forward launches one kernel per 64 input rows and allocates only the output:
the kernels are loaded and the split-K workspace reserved when the module is built, so the forward
can be captured in a CUDA graph.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload.pinned import WEIGHT_DTYPES, SplitWeight, check_weight
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, package_source
from smemkit.runtime.tensors import check_tensor

SOURCE = "offload/split_gemv.cu"

# Mirrors of split_gemv.cu's constants (a CPU test checks them against the source).
THREADS = 256
WARPS = 8
TILE_M = 16
TILE_K = 32
BLOCK_ROWS = WARPS * TILE_M
HOST_STEPS_MAX = 4
HOST_WINDOW_UNIT = THREADS * 2 * 16  # bytes in flight per CTA per host k-step: 2 rows x 16 B per thread
BATCH_TILES = (1, 2, 4, 8)
MAX_BATCH = 8 * BATCH_TILES[-1]
HBM_STEPS = {1: 4, 2: 4, 4: 2, 8: 4}
MIN_CTAS_PER_SM = {1: 2, 2: 2, 4: 2, 8: 1}
DTYPE_CODE = {torch.bfloat16: 0, torch.float16: 1}
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float16: "fp16"}
KERNEL_PARAMS = ("ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr",
                 "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32")
# The launch planner's time model (a heuristic; the H200 run should check it, and split_g /
# split_h override it). Rates in bytes per microsecond.
HBM_BYTES_PER_US = 4.2e6  # ~4.2 TB/s device-copy rate
HOST_BYTES_PER_US = 52e3  # ~52 GB/s SM loads of pinned memory (SPEC, smemkit probe)
HBM_LATENCY_US = 1.25  # loaded HBM latency: a CTA with F bytes in flight streams at most F / latency
HOST_LATENCY_US = 2.0
UNIT_OVERHEAD_US = 2.0  # per unit: the pipeline drains, partials are stored, the counter is bumped
PARTIAL_COST = 0.5  # fp32 partials move through L2 (written, then read once): half an HBM byte each


def kernel_name(nt: int) -> str:
    return f"split_gemv_nt{nt}"


def batch_tiles(batch: int) -> int:
    """Batch tiles of 8 the kernel is instantiated with for ``batch`` rows (1, 2, 4 or 8)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise InvalidArgumentError(f"batch must be an integer in 1..{MAX_BATCH} per launch, got {batch!r}")
    for nt in BATCH_TILES:
        if batch <= 8 * nt:
            return nt
    raise AssertionError("unreachable")


def host_steps_for_window(window_bytes: int) -> int:
    """k-steps per host group for a congestion window of ``window_bytes`` per CTA (8 KB units)."""
    if isinstance(window_bytes, bool) or not isinstance(window_bytes, int) or window_bytes <= 0:
        raise InvalidArgumentError(f"host_window must be a positive number of bytes, got {window_bytes!r}")
    if window_bytes % HOST_WINDOW_UNIT or window_bytes > HOST_STEPS_MAX * HOST_WINDOW_UNIT:
        allowed = ", ".join(str(HOST_WINDOW_UNIT * s) for s in range(1, HOST_STEPS_MAX + 1))
        raise InvalidArgumentError(
            f"host_window = {window_bytes} bytes: the split kernel's window is a whole number of "
            f"{HOST_WINDOW_UNIT}-byte k-steps per CTA of {THREADS} threads; allowed: {allowed}")
    return window_bytes // HOST_WINDOW_UNIT


def window_to_host_steps(window_bytes: float) -> int:
    """The nearest kernel window (1..HOST_STEPS_MAX k-steps) to a probe window of any size."""
    return max(1, min(HOST_STEPS_MAX, round(window_bytes / HOST_WINDOW_UNIT)))


@dataclass(frozen=True)
class LaunchPlan:
    """One launch of ``split_gemv_nt{nt}``: grid, roles, k-splits and workspace."""

    nt: int
    grid: int
    host_ctas: int
    hbm_ctas: int
    host_steps: int
    split_g: int
    steps_g: int
    split_h: int
    steps_h: int
    units_g: int
    units_h: int
    ws_floats: int
    n_counters: int
    slots: int

    def kernel_args(self) -> tuple[int, ...]:
        """The trailing scalars after N, K, B, n_hbm (in the kernel's order)."""
        return (self.host_ctas, self.host_steps, self.split_g, self.steps_g, self.split_h, self.steps_h)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def tier_time_us(blocks: int, split: int, ctas: int, block_bytes: float, bytes_per_us: float,
                 cta_bytes_per_us: float, partial_bytes: float) -> float:
    """Modelled time of one tier: ``blocks`` row units of ``block_bytes`` each, k-split ``split``,
    dealt to at most ``ctas`` CTAs (balanced: every CTA gets ``waves`` or ``waves - 1`` units).

    A CTA streams at min(tier rate / active CTAs, its own cap = bytes in flight / latency) and pays
    UNIT_OVERHEAD_US per unit; a split > 1 adds its fp32 partials (``partial_bytes`` per split,
    written and read) at PARTIAL_COST of the tier rate.
    """
    units = blocks * split
    waves = -(-units // ctas)
    active = -(-units // waves)
    rate = min(bytes_per_us / active, cta_bytes_per_us)
    t = waves * (block_bytes / split / rate + UNIT_OVERHEAD_US)
    if split > 1:
        t += PARTIAL_COST * split * partial_bytes / HBM_BYTES_PER_US
    return t


def choose_split(blocks: int, ctas: int, max_split: int, block_bytes: float, bytes_per_us: float,
                 cta_bytes_per_us: float, partial_bytes: float) -> int:
    """The k-split (1..max_split) with the least :func:`tier_time_us`; ties go to the smaller split."""
    if blocks <= 0 or ctas <= 0:
        return 1
    best_s, best_t = 1, math.inf
    for s in range(1, max(1, max_split) + 1):
        t = tier_time_us(blocks, s, ctas, block_bytes, bytes_per_us, cta_bytes_per_us, partial_bytes)
        if t < best_t * (1 - 1e-9):
            best_s, best_t = s, t
    return best_s


def _balanced(units: int, ctas: int) -> int:
    """Fewest CTAs that still finish ``units`` in the same number of waves (equal shares)."""
    waves = -(-units // ctas)
    return -(-units // waves)


@lru_cache(maxsize=4096)
def plan_launch(n_rows: int, k: int, batch: int, n_hbm: int, *, slots: int, host_ctas: int,
                host_steps: int, split_g: int | None = None, split_h: int | None = None,
                hbm_bytes_per_us: float = HBM_BYTES_PER_US, host_bytes_per_us: float = HOST_BYTES_PER_US,
                ) -> LaunchPlan:
    """Plan one launch for an (n_rows x k) weight with ``n_hbm`` rows in HBM and ``batch`` input rows.

    ``slots`` is how many CTAs the GPU holds at once (SMs x CTAs per SM). Host CTAs take units of
    one 16-row tile x one k-split; HBM CTAs units of 128 rows x one k-split. Each tier's k-split
    minimises :func:`tier_time_us`, then the tier gets the fewest CTAs that keep its waves (so every
    CTA has the same number of units, +-1). ``split_g`` / ``split_h`` override the k-splits (then
    normalised so that no split is empty).
    """
    for label, value in (("n_rows", n_rows), ("k", k), ("slots", slots), ("host_ctas", host_ctas),
                         ("host_steps", host_steps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{label} must be a positive integer, got {value!r}")
    if k % 8:
        raise InvalidArgumentError(f"K = {k} must be a multiple of 8")
    if not 0 <= n_hbm <= n_rows:
        raise InvalidArgumentError(f"n_hbm = {n_hbm} must be in [0, {n_rows}]")
    if host_steps > HOST_STEPS_MAX:
        raise InvalidArgumentError(f"host_steps = {host_steps} exceeds the kernel's {HOST_STEPS_MAX}")
    nt = batch_tiles(batch)
    ksteps = -(-k // TILE_K)
    n_host = n_rows - n_hbm
    tiles_h = -(-n_host // TILE_M)
    tiles_g = -(-n_hbm // TILE_M)
    blocks_g = -(-tiles_g // WARPS)

    h, sh, units_h = 0, 1, 0
    if tiles_h:
        h_max = min(host_ctas, slots - 1 if blocks_g else slots)
        if h_max < 1:
            raise InvalidArgumentError(f"no CTA slot is left for the host rows (slots = {slots})")
        cap = max(1, ksteps // (WARPS * host_steps))
        window = host_steps * HOST_WINDOW_UNIT
        sh = split_h if split_h is not None else choose_split(
            tiles_h, h_max, cap, TILE_M * k * 2, host_bytes_per_us, window / HOST_LATENCY_US,
            8.0 * batch * n_host)
        sh = max(1, min(sh, ksteps))
        sh = -(-ksteps // -(-ksteps // sh))  # no empty split
        units_h = tiles_h * sh
        h = _balanced(units_h, h_max)
    g, sg, units_g = 0, 1, 0
    if blocks_g:
        g_max = slots - h
        cap = max(1, ksteps // (2 * HBM_STEPS[nt]))
        in_flight = THREADS * 2 * HBM_STEPS[nt] * 16
        sg = split_g if split_g is not None else choose_split(
            blocks_g, g_max, cap, BLOCK_ROWS * k * 2, hbm_bytes_per_us, in_flight / HBM_LATENCY_US,
            8.0 * batch * n_hbm)
        sg = max(1, min(sg, ksteps))
        sg = -(-ksteps // -(-ksteps // sg))
        units_g = blocks_g * sg
        g = _balanced(units_g, g_max)
    steps_g = -(-ksteps // sg)
    steps_h = -(-ksteps // sh)
    widest = max(sg if sg > 1 else 0, sh if sh > 1 else 0)
    return LaunchPlan(
        nt=nt, grid=h + g, host_ctas=h, hbm_ctas=g, host_steps=host_steps, split_g=sg, steps_g=steps_g,
        split_h=sh, steps_h=steps_h, units_g=units_g, units_h=units_h,
        ws_floats=widest * batch * n_rows, n_counters=(blocks_g + tiles_h) if widest else 0, slots=slots)


def unit_coverage(plan: LaunchPlan, n_rows: int, k: int, n_hbm: int) -> dict[tuple[str, int, int], int]:
    """How many times each (tier, 16-row tile, k-step) is computed under ``plan``, by walking the
    kernel's unit loops in Python (the CPU tests require exactly once for every pair)."""
    ksteps = -(-k // TILE_K)
    seen: dict[tuple[str, int, int], int] = {}
    n_host = n_rows - n_hbm
    for cta in range(plan.host_ctas):
        for unit in range(cta, plan.units_h, plan.host_ctas):
            mt, s = divmod(unit, plan.split_h)
            st0, st1 = s * plan.steps_h, min(ksteps, (s + 1) * plan.steps_h)
            if mt * TILE_M >= n_host:
                continue
            for warp in range(WARPS):
                for st in range(st0 + warp * plan.host_steps, st1, WARPS * plan.host_steps):
                    for u in range(plan.host_steps):
                        if st + u < st1:
                            key = ("host", mt, st + u)
                            seen[key] = seen.get(key, 0) + 1
    for cta in range(plan.hbm_ctas):
        for unit in range(cta, plan.units_g, plan.hbm_ctas):
            rb, s = divmod(unit, plan.split_g)
            st0, st1 = s * plan.steps_g, min(ksteps, (s + 1) * plan.steps_g)
            for warp in range(WARPS):
                m0 = rb * BLOCK_ROWS + warp * TILE_M
                if m0 >= n_hbm:
                    continue
                for st in range(st0, st1):
                    key = ("hbm", m0 // TILE_M, st)
                    seen[key] = seen.get(key, 0) + 1
    return seen


# ---- compiling ------------------------------------------------------------------------------------

@cache
def source() -> str:
    return package_source(SOURCE)


def defines(dtype: torch.dtype, host_load: int = 0, host_stage: int = 1) -> dict[str, int]:
    """Compile-time choices of split_gemv.cu (see its header): dtype, host load instruction, and
    whether host warps stage whole row segments through shared memory (1) or load fragments (0)."""
    if dtype not in DTYPE_CODE:
        raise InvalidArgumentError(f"split kernel dtype must be bfloat16 or float16, got {dtype}")
    if host_load not in (0, 1, 2):
        raise InvalidArgumentError("host_load must be 0 (ld.global.cs), 1 (ld.global.nc) or 2 (ld.global)")
    if host_stage not in (0, 1):
        raise InvalidArgumentError("host_stage must be 1 (coalesced rows via shared memory) or 0 (fragments)")
    return {"GEMV_DTYPE": DTYPE_CODE[dtype], "HOST_LOAD": host_load, "HOST_STAGE": host_stage}


def variant_label(dtype: torch.dtype, host_load: int = 0, host_stage: int = 1) -> str:
    return f"offload/split_gemv.{DTYPE_NAME[dtype]}.hl{host_load}.st{host_stage}"


def compile_variant(dtype: torch.dtype, arch: str = DEFAULT_ARCH, host_load: int = 0,
                    host_stage: int = 1) -> CompiledModule:
    """The module for one dtype (all four batch-tile kernels), compiled for ``arch``."""
    return compile_module(source(), variant_label(dtype, host_load, host_stage), arch=arch,
                          defines=defines(dtype, host_load, host_stage))


def shipped_variants() -> list[tuple[torch.dtype, int, int]]:
    """(dtype, HOST_LOAD, HOST_STAGE) the library launches by default: both dtypes, ld.global.cs,
    staged host rows."""
    return [(torch.bfloat16, 0, 1), (torch.float16, 0, 1)]


def source_constants(text: str | None = None) -> dict[str, int]:
    """``#define NAME <int>`` values of split_gemv.cu (to check the mirrors above)."""
    text = source() if text is None else text
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+(\w+)\s+(\d+)\s*$", text, re.M)}


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
def _slots(dtype: torch.dtype, nt: int, device_index: int, host_load: int = 0, host_stage: int = 1) -> int:
    """CTAs of the nt kernel the GPU holds at once (driver occupancy x SMs)."""
    with torch.cuda.device(device_index):
        return _kernel(dtype, nt, host_load, host_stage).max_active_ctas(THREADS, 0)


def prepare(dtype: torch.dtype, device_index: int, max_batch: int = MAX_BATCH, host_load: int = 0,
            host_stage: int = 1) -> None:
    """Compile and load the kernels ``max_batch`` rows need on this GPU (before any graph capture)."""
    with torch.cuda.device(device_index):
        for nt in BATCH_TILES:
            if nt <= batch_tiles(min(max_batch, MAX_BATCH)):
                kern = _kernel(dtype, nt, host_load, host_stage)
                kern.module._load(kern.name, device_index)
                _slots(dtype, nt, device_index, host_load, host_stage)


class SplitScratch:
    """The split-K workspace (fp32 partials) and the arrival counters of one device.

    Kernels on one stream use it one after another; two streams running split kernels at the same
    time need a scratch each (pass ``scratch=``). Buffers only grow; an outgrown buffer is kept
    alive, since a captured CUDA graph may still point at it. Counters are zero when a launch
    starts and the kernel leaves them zero.
    """

    def __init__(self, device_index: int) -> None:
        self.device_index = device_index
        self.ws: torch.Tensor | None = None
        self.counters: torch.Tensor | None = None
        self._retired: list[torch.Tensor] = []
        self._lock = threading.Lock()

    def reserve(self, ws_floats: int, n_counters: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        with self._lock:
            dev = torch.device("cuda", self.device_index)
            if ws_floats and (self.ws is None or self.ws.numel() < ws_floats):
                if self.ws is not None:
                    self._retired.append(self.ws)
                self.ws = torch.empty(ws_floats, dtype=torch.float32, device=dev)
            if n_counters and (self.counters is None or self.counters.numel() < n_counters):
                if self.counters is not None:
                    self._retired.append(self.counters)
                self.counters = torch.zeros(max(n_counters, 64), dtype=torch.int32, device=dev)
            return (self.ws if ws_floats else None), (self.counters if n_counters else None)


_SCRATCH: dict[int, SplitScratch] = {}


def default_scratch(device_index: int) -> SplitScratch:
    if device_index not in _SCRATCH:
        _SCRATCH[device_index] = SplitScratch(device_index)
    return _SCRATCH[device_index]


def _ptr(t: torch.Tensor | None) -> int:
    return 0 if t is None or t.numel() == 0 else int(t.data_ptr())


def check_split_args(x: object, weight: object, bias: object = None,
                     out: object = None) -> tuple[int, int, int]:
    """Argument checks of :func:`split_linear` that need no GPU; returns (M, N, K).

    ``weight`` needs only ``shape``, ``dtype`` and ``device`` (a SplitWeight).
    """
    shape = getattr(weight, "shape", None)
    if not isinstance(weight, SplitWeight) and not (hasattr(weight, "n_hbm") and shape is not None):
        raise InvalidArgumentError(f"weight must be a SplitWeight, got {type(weight).__name__}")
    n, k = shape
    wdtype, wdev = weight.dtype, weight.device
    if not isinstance(x, torch.Tensor):
        raise InvalidArgumentError(f"x must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.shape[-1] != k:
        raise InvalidArgumentError(f"x must have shape (..., {k}) to match the weight ({n}x{k}), "
                                   f"got {tuple(x.shape)}")
    check_tensor("x", x, dtype=wdtype, device=wdev)
    m = x.numel() // k if k else 0
    if bias is not None:
        check_tensor("bias", bias, dtype=wdtype, shape=(n,), device=wdev, alignment=2)
    if out is not None:
        check_tensor("out", out, dtype=wdtype, shape=(*x.shape[:-1], n), device=wdev, alignment=2)
    return m, n, k


def _host_config(host_ctas: int | None, host_window: int | None, device_index: int) -> tuple[int, int]:
    if host_ctas is None or host_window is None:
        from smemkit.offload.congestion import default_host_config

        d_ctas, d_window = default_host_config(device_index)
        host_ctas = d_ctas if host_ctas is None else host_ctas
        host_steps = (window_to_host_steps(d_window) if host_window is None
                      else host_steps_for_window(host_window))
    else:
        host_steps = host_steps_for_window(host_window)
    if isinstance(host_ctas, bool) or not isinstance(host_ctas, int) or host_ctas < 1:
        raise InvalidArgumentError(f"host_ctas must be a positive integer, got {host_ctas!r}")
    return host_ctas, host_steps


def split_linear(x: torch.Tensor, weight: SplitWeight, bias: torch.Tensor | None = None, *,
                 host_ctas: int | None = None, host_window: int | None = None,
                 out: torch.Tensor | None = None, scratch: SplitScratch | None = None,
                 split_g: int | None = None, split_h: int | None = None, host_load: int = 0,
                 host_stage: int = 1) -> torch.Tensor:
    """``x @ W.T (+ bias)`` with ``W`` split between HBM and pinned host memory, in one kernel.

    ``x``: (..., K) bf16/fp16 CUDA tensor (the weight's dtype), contiguous; ``bias``: (N,) or None.
    ``host_ctas``: CTAs reading host rows (default: the device profile's congestion choice, else
    8); ``host_window``: bytes of host reads in flight per such CTA (8192, 16384, 24576 or
    32768; default likewise, else 16384). ``out``: an output tensor to write (shape (..., N)).
    ``split_g``/``split_h`` force the k-splits; ``host_load`` / ``host_stage`` pick the host read
    variant of split_gemv.cu (experiments). Returns (..., N) in x's dtype.
    """
    m, n, k = check_split_args(x, weight, bias, out)
    from smemkit.runtime.device import require_gpu

    require_gpu()
    if weight.freed:
        raise InvalidArgumentError("the SplitWeight was freed")
    device_index = weight.device.index
    lead = tuple(x.shape[:-1])
    y = out if out is not None else torch.empty((*lead, n), dtype=x.dtype, device=x.device)
    if m == 0:
        return y
    hc, hs = _host_config(host_ctas, host_window, device_index)
    scratch = scratch or default_scratch(device_index)
    x2 = x.reshape(m, k)
    y2 = y.view(m, n)
    for start in range(0, m, MAX_BATCH):
        stop = min(m, start + MAX_BATCH)
        _launch(x2[start:stop], y2[start:stop], weight, bias, hc, hs, scratch, split_g, split_h, host_load,
                host_stage)
    return y


def _launch(x: torch.Tensor, y: torch.Tensor, w: SplitWeight, bias: torch.Tensor | None, host_ctas: int,
            host_steps: int, scratch: SplitScratch, split_g: int | None, split_h: int | None,
            host_load: int, host_stage: int) -> LaunchPlan:
    b, k = x.shape
    n = w.shape[0]
    nt = batch_tiles(b)
    device_index = w.device.index
    slots = _slots(w.dtype, nt, device_index, host_load, host_stage)
    plan = plan_launch(n, k, b, w.n_hbm, slots=slots, host_ctas=host_ctas, host_steps=host_steps,
                       split_g=split_g, split_h=split_h)
    ws, counters = scratch.reserve(plan.ws_floats, plan.n_counters)
    kern = _kernel(w.dtype, nt, host_load, host_stage)
    kern.launch(plan.grid, THREADS, _ptr(w.hbm), w.host_ptr if w.host_rows else 0, _ptr(x), _ptr(bias),
                _ptr(y), _ptr(ws), _ptr(counters), n, k, b, w.n_hbm, *plan.kernel_args(), device=device_index)
    return plan


def launch_plan_for(x_rows: int, weight: SplitWeight, *, host_ctas: int | None = None,
                    host_window: int | None = None, host_load: int = 0, host_stage: int = 1) -> LaunchPlan:
    """The plan ``split_linear`` would use for an input of ``x_rows`` (<= 64) rows (GPU needed for
    the occupancy figure)."""
    hc, hs = _host_config(host_ctas, host_window, weight.device.index)
    nt = batch_tiles(x_rows)
    slots = _slots(weight.dtype, nt, weight.device.index, host_load, host_stage)
    n, k = weight.shape
    return plan_launch(n, k, x_rows, weight.n_hbm, slots=slots, host_ctas=hc, host_steps=hs)


class OffloadedLinear(nn.Module):
    """``nn.Linear`` with its weight split between HBM and pinned host memory (DAK).

    Build it with :meth:`from_linear` (``OffloadedLinear.from_linear(linear, ratio=0.1)``). The
    forward accepts (..., in_features) bf16/fp16 CUDA inputs and returns (..., out_features). The
    weight is not a Parameter (inference only; ``state_dict`` holds the bias alone); moving the
    module with ``.to()`` is not supported. ``free()`` releases the pinned memory at once.
    """

    def __init__(self, weight: SplitWeight, bias: torch.Tensor | None = None, *, host_ctas: int | None = None,
                 host_window: int | None = None, max_batch: int = MAX_BATCH) -> None:
        super().__init__()
        if not isinstance(weight, SplitWeight):
            raise InvalidArgumentError(f"weight must be a SplitWeight, got {type(weight).__name__}")
        n, k = weight.shape
        self.in_features, self.out_features = k, n
        self.split_weight = weight
        if bias is not None:
            check_tensor("bias", bias, dtype=weight.dtype, shape=(n,), device=weight.device, alignment=2)
        self.register_buffer("bias", bias)
        self.host_ctas, self.host_window = host_ctas, host_window
        self._host = _host_config(host_ctas, host_window, weight.device.index)
        self.scratch = default_scratch(weight.device.index)
        self._prepare(max_batch)

    def _prepare(self, max_batch: int) -> None:
        """Load the kernels and reserve the workspace every batch up to ``max_batch`` rows needs, so
        the forward allocates nothing but its output (CUDA-graph capture)."""
        w = self.split_weight
        device_index = w.device.index
        prepare(w.dtype, device_index, max_batch)
        n, k = w.shape
        need_ws, need_counters = 0, 0
        for b in range(1, min(max_batch, MAX_BATCH) + 1):
            nt = batch_tiles(b)
            plan = plan_launch(n, k, b, w.n_hbm, slots=_slots(w.dtype, nt, device_index),
                               host_ctas=self._host[0], host_steps=self._host[1])
            need_ws, need_counters = max(need_ws, plan.ws_floats), max(need_counters, plan.n_counters)
        self.scratch.reserve(need_ws, need_counters)

    @classmethod
    def from_linear(cls, linear: nn.Linear, ratio: float, *, device: int | torch.device | None = None,
                    host_ctas: int | None = None, host_window: int | None = None,
                    max_batch: int = MAX_BATCH) -> OffloadedLinear:
        """Split ``linear``'s weight at offload ratio ``ratio`` (rows rounded to the kernel's 16-row
        tile). ``linear`` is not modified; its weight must be bf16 or fp16 with in_features a
        multiple of 8. Pinned memory is allocated before anything is copied."""
        if not isinstance(linear, nn.Linear):
            raise InvalidArgumentError(f"from_linear needs an nn.Linear, got {type(linear).__name__}")
        check_weight(linear.weight.detach(), "linear.weight")
        if linear.weight.dtype not in WEIGHT_DTYPES:  # pragma: no cover - check_weight covers it
            raise InvalidArgumentError("linear.weight must be bfloat16 or float16")
        weight = SplitWeight(linear.weight.detach(), ratio, device=device)
        bias = None
        if linear.bias is not None:
            bias = linear.bias.detach().to(weight.device, copy=True).contiguous()
        return cls(weight, bias, host_ctas=host_ctas, host_window=host_window, max_batch=max_batch)

    @property
    def ratio(self) -> float:
        return self.split_weight.ratio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return split_linear(x, self.split_weight, self.bias, host_ctas=self._host[0],
                            host_window=self._host[1] * HOST_WINDOW_UNIT, scratch=self.scratch)

    def free(self) -> None:
        """Release the pinned rows now."""
        self.split_weight.free()

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, ratio={self.ratio:.4f}, host_ctas={self._host[0]}, "
                f"host_window={self._host[1] * HOST_WINDOW_UNIT}")
