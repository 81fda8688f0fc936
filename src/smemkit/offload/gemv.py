"""The split GEMV / skinny GEMM for decode (``split_gemv.cu``): launch planning, the op, the module.

``split_linear(x, w)`` computes ``x @ W.T (+ bias)`` for a :class:`~smemkit.offload.pinned.SplitWeight`
``W`` whose last rows live in pinned host memory, in one kernel: ``host_ctas`` CTAs stream the host
rows with register loads (each with at most ``host_window`` bytes of host reads in flight), the
others stream the HBM rows through cp.async stage rings, up to 64 input rows per launch. The
default ``path="auto"`` runs it only where it is measured faster than the ring path of
:mod:`.ring_gemm` (cuBLAS GEMMs, the host rows copied by the copy engine through a two-slot ring
under them): at 1-8 rows with a small host part (:func:`auto_path`). ``path="kernel"`` forces it
(past 64 rows in chunks of 64, each reading the whole weight).

Everything above :class:`SplitScratch` is pure Python (tested without a GPU): the constants the
kernel is built with, and :func:`plan_launch`, which turns a shape and a host configuration into
a grid, a k-split per tier and the workspace it needs. The split is chosen so that every CTA of a
tier gets the same number of units (no wave-quantization tail) at the least modelled cost.

:class:`OffloadedLinear` is a drop-in for ``nn.Linear`` (bias supported) holding its weight as a
``SplitWeight``. Its forward allocates only the output: the kernels are loaded, the split-K
workspace reserved and the ring path's slots for the current stream allocated when the module is
built (a CUDA-graph capture, on torch's capture stream, allocates that stream's ring at its first
capture, from the graph's pool; the ring path's first call also gets cuBLAS a workspace for the
ring's GEMM stream, :mod:`.ring_gemm`), so the forward can be captured in a CUDA graph.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache

import torch
from torch import nn

from smemkit.errors import InvalidArgumentError, check_positive_int, is_int
from smemkit.offload.direct_gemm import direct_linear
from smemkit.offload.pinned import WEIGHT_DTYPES, SplitWeight, check_weight
from smemkit.offload.ring_gemm import host_ring, linear_into, ring_linear
from smemkit.offload.split_rule import auto_path, fixed_path
from smemkit.runtime.compiler import DEFAULT_ARCH, CompiledModule, compile_module, package_source
from smemkit.runtime.tensors import check_tensor

SOURCE = "offload/split_gemv.cu"

# Mirrors of split_gemv.cu's constants (a CPU test checks them against the source).
THREADS = 256
WARPS = 8
TILE_M = 16
TILE_K = 64  # k per pipeline stage (128 bytes of a bf16/fp16 row)
ROW_BYTES = TILE_K * 2
HOST_ROWS = TILE_M  # rows per host unit (one 16-row tile, run 6's host scheme)
HOST_KSTEP = 32  # k per host k-step (a host warp's group is host_steps of them)
HOST_STEPS_MAX = 4
HBM_DEPTH_MAX = 7
HOST_WINDOW_UNIT = THREADS * 2 * 16  # host bytes in flight per CTA per k-step: 2 x 16 B per thread
BATCH_TILES = (1, 2, 4, 8)
MAX_BATCH = 8 * BATCH_TILES[-1]
HBM_MT = {1: 1, 2: 1, 4: 1, 8: 2}  # 16-row tiles per warp on the HBM path
HBM_ROWS = {nt: WARPS * TILE_M * mt for nt, mt in HBM_MT.items()}  # rows per HBM unit
MIN_CTAS_PER_SM = {1: 2, 2: 2, 4: 2, 8: 1}
# Default HBM pipeline depth (stages in flight per CTA): 2 x 16 KB = 32 KB per CTA at nt <= 4
# (2 CTAs per SM: 64 KB per SM), 2 x 32 KB = 64 KB at nt = 8 (1 CTA per SM). Little's law:
# 4.3 TB/s x ~1-2 us loaded latency = 4-9 MB in flight = 33-65 KB per SM. Run 7 (H200 sweep of
# commit 363b08b) measured depth 2 faster than 3 at every r = 0 point it timed (e.g. 8192x28672,
# B = 1: 1.19x cuBLAS vs 1.53x).
HBM_DEPTH = {1: 2, 2: 2, 4: 2, 8: 2}
# Static shared memory of split_gemv_nt{nt}: the host role's cross-warp sum, the HBM ring's full
# and empty mbarriers (HBM_DEPTH_MAX + 1 slots each) and the last-CTA flag.
STATIC_SMEM = {nt: WARPS * nt * 4 * 32 * 4 + 2 * 8 * (HBM_DEPTH_MAX + 1) + 16 for nt in BATCH_TILES}
HOST_BARRIER_SMEM = 8 * WARPS  # host_stage = 3: one mbarrier per warp (static, on top of STATIC_SMEM)


def static_smem(nt: int, host_stage: int = 1) -> int:
    """Static shared memory of split_gemv_nt{nt} built with ``host_stage``."""
    return STATIC_SMEM[nt] + (HOST_BARRIER_SMEM if host_stage == 3 else 0)
SMEM_PER_BLOCK_OPTIN = 232448  # H100/H200: 227 KB per CTA (static + dynamic)
DTYPE_CODE = {torch.bfloat16: 0, torch.float16: 1}
DTYPE_NAME = {torch.bfloat16: "bf16", torch.float16: "fp16"}
KERNEL_PARAMS = ("ptr", "ptr", "ptr", "ptr", "ptr", "ptr", "ptr",
                 "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "i32")
# The launch planner's time model (a heuristic; the H200 sweep checks it, and split_g / split_h
# override it). Rates in bytes per microsecond.
HBM_BYTES_PER_US = 4.2e6  # ~4.2 TB/s device-copy rate
HOST_BYTES_PER_US = 52e3  # ~52 GB/s SM loads of pinned memory (SPEC, smemkit probe)
HBM_LATENCY_US = 1.5  # loaded HBM latency: a CTA with F bytes in flight streams at most F / latency
HOST_LATENCY_US = 2.5  # probe: 8 CTAs x 16 KB in flight -> 51 GB/s, i.e. 6.4 GB/s per CTA
UNIT_OVERHEAD_US = 0.5  # per unit: the epilogue (the pipeline runs on across units: no drain)
PARTIAL_COST = 0.5  # fp32 partials move through L2 (written, then read once): half an HBM byte each
REDUCE_BYTES_PER_US = 50e3  # the last CTA of a tile reads its partials (float4, 64 KB in flight) at ~50 GB/s
MMA_MACS_PER_US_PER_SM = 1.0e6  # mma.sync m16n8k16 incl. LDS issue, ~1/4 of the dense bf16 peak, per SM


def kernel_name(nt: int) -> str:
    return f"split_gemv_nt{nt}"


def batch_tiles(batch: int) -> int:
    """Batch tiles of 8 the kernel is instantiated with for ``batch`` rows (1, 2, 4 or 8)."""
    if not is_int(batch) or not 1 <= batch <= MAX_BATCH:
        raise InvalidArgumentError(f"batch must be an integer in 1..{MAX_BATCH} per launch, got {batch!r}")
    for nt in BATCH_TILES:
        if batch <= 8 * nt:
            return nt
    raise AssertionError("unreachable")


def host_steps_for_window(window_bytes: int) -> int:
    """k-steps per host group for a congestion window of ``window_bytes`` per CTA (8 KB units)."""
    from smemkit.offload.congestion import window_units

    return window_units(window_bytes, HOST_WINDOW_UNIT, HOST_STEPS_MAX,
                        f"the split kernel's window is a whole number of {HOST_WINDOW_UNIT}-byte "
                        f"k-steps per CTA of {THREADS} threads")


def window_to_host_steps(window_bytes: float) -> int:
    """The nearest kernel window (1..HOST_STEPS_MAX k-steps) to a probe window of any size."""
    from smemkit.offload.congestion import nearest_window_units

    return nearest_window_units(window_bytes, HOST_WINDOW_UNIT, HOST_STEPS_MAX)


@dataclass(frozen=True)
class LaunchPlan:
    """One launch of ``split_gemv_nt{nt}``: grid, roles, k-splits (in 64-k chunks), pipeline depths,
    dynamic shared memory and workspace."""

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
    hbm_depth: int = HBM_DEPTH[1]
    smem: int = 0

    def kernel_args(self) -> tuple[int, ...]:
        """The trailing scalars after N, K, B, n_hbm (in the kernel's order)."""
        return (self.host_ctas, self.host_steps, self.split_g, self.steps_g, self.split_h, self.steps_h,
                self.hbm_depth)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def host_stage_stride(host_steps: int) -> int:
    """Row stride, in 16-byte chunks, of a host warp's staging tile (split_gemv.cu
    host_stage_stride): C = 4 host_steps chunks per row, padded so the stride is 64 mod 128 bytes."""
    c = 4 * host_steps
    return c if c % 8 == 4 else c + 4


def host_stage_bytes(host_steps: int, host_stage: int = 1) -> int:
    """Dynamic shared memory of the host role: 8 warps x 16 rows x stride x 16 B (none when the
    fragments are loaded directly, host_stage = 0)."""
    return WARPS * HOST_ROWS * host_stage_stride(host_steps) * 16 if host_stage else 0


def smem_bytes(nt: int, *, hbm: bool, host: bool, hbm_depth: int, host_steps: int,
               host_stage: int = 1) -> int:
    """Dynamic shared memory of one launch: the larger of the roles present: the HBM ring
    (depth + 1 stages of (HBM_ROWS + 8 nt x rows) x 128 bytes) and the host warps' staging tiles."""
    need = 0
    if hbm:
        need = max(need, (hbm_depth + 1) * (HBM_ROWS[nt] + 8 * nt) * ROW_BYTES)
    if host:
        need = max(need, host_stage_bytes(host_steps, host_stage))
    return need


def max_hbm_depth(nt: int, smem_limit: int = SMEM_PER_BLOCK_OPTIN, host_stage: int = 1) -> int:
    """The deepest HBM pipeline whose ring fits one CTA's shared memory (0: none does)."""
    for d in range(HBM_DEPTH_MAX, 0, -1):
        ring = smem_bytes(nt, hbm=True, host=False, hbm_depth=d, host_steps=1)
        if ring + static_smem(nt, host_stage) <= smem_limit:
            return d
    return 0


def tier_time_us(blocks: int, split: int, ctas: int, block_bytes: float, bytes_per_us: float,
                 cta_bytes_per_us: float, partial_bytes: float, reduce_bytes: float = 0.0) -> float:
    """Modelled time of one tier: ``blocks`` row units of ``block_bytes`` each, k-split ``split``,
    dealt to at most ``ctas`` CTAs (balanced: every CTA gets ``waves`` or ``waves - 1`` units).

    A CTA streams at min(tier rate / active CTAs, its own cap = min(bytes in flight / latency,
    its share of the SM's mma rate)) and pays UNIT_OVERHEAD_US per unit; a split > 1 adds its fp32
    partials (``partial_bytes`` per split, written and read) at PARTIAL_COST of the HBM rate, and
    the last CTA of a row block then reads ``split x reduce_bytes`` alone (the reduction tail).
    """
    units = blocks * split
    waves = -(-units // ctas)
    active = -(-units // waves)
    rate = min(bytes_per_us / active, cta_bytes_per_us)
    t = waves * (block_bytes / split / rate + UNIT_OVERHEAD_US)
    if split > 1:
        t += PARTIAL_COST * split * partial_bytes / HBM_BYTES_PER_US
        t += split * reduce_bytes / REDUCE_BYTES_PER_US
    return t


def choose_split(blocks: int, ctas: int, max_split: int, block_bytes: float, bytes_per_us: float,
                 cta_bytes_per_us: float, partial_bytes: float, reduce_bytes: float = 0.0) -> int:
    """The k-split (1..max_split) with the least :func:`tier_time_us`; ties go to the smaller split."""
    if blocks <= 0 or ctas <= 0:
        return 1
    best_s, best_t = 1, math.inf
    for s in range(1, max(1, max_split) + 1):
        t = tier_time_us(blocks, s, ctas, block_bytes, bytes_per_us, cta_bytes_per_us, partial_bytes,
                         reduce_bytes)
        if t < best_t * (1 - 1e-9):
            best_s, best_t = s, t
    return best_s


def _balanced(units: int, ctas: int) -> int:
    """Fewest CTAs that still finish ``units`` in the same number of waves (equal shares)."""
    waves = -(-units // ctas)
    return -(-units // waves)


def mma_bytes_per_us(nt: int, ctas_per_sm: int) -> float:
    """Weight bytes per microsecond one CTA's mma.sync work can consume (8 nt MACs per element)."""
    return 2.0 * MMA_MACS_PER_US_PER_SM / (8 * nt) / max(1, ctas_per_sm)


@lru_cache(maxsize=4096)
def plan_launch(n_rows: int, k: int, batch: int, n_hbm: int, *, slots: int, host_ctas: int,
                host_steps: int, split_g: int | None = None, split_h: int | None = None,
                hbm_depth: int | None = None, host_stage: int = 1,
                hbm_bytes_per_us: float = HBM_BYTES_PER_US, host_bytes_per_us: float = HOST_BYTES_PER_US,
                smem_limit: int = SMEM_PER_BLOCK_OPTIN) -> LaunchPlan:
    """Plan one launch for an (n_rows x k) weight with ``n_hbm`` rows in HBM and ``batch`` input rows.

    ``slots`` is how many CTAs the GPU holds at once (SMs x CTAs per SM, at this launch's shared
    memory). Host CTAs take units of one 16-row tile x one k-split; HBM CTAs units of
    HBM_ROWS[nt] rows x one k-split (k-splits count 64-k chunks). Each tier's k-split minimises
    :func:`tier_time_us`, then the tier gets the fewest CTAs that keep its waves (so every CTA has the
    same number of units, +-1). ``split_g`` / ``split_h`` override the k-splits (then normalised so
    that no split is empty); ``hbm_depth`` the HBM pipeline depth (default HBM_DEPTH[nt], lowered
    to the deepest ring that fits ``smem_limit``: a configuration the planner picks always fits; a
    forced ``hbm_depth`` that does not fit raises an error naming it).
    """
    for label, value in (("n_rows", n_rows), ("k", k), ("slots", slots), ("host_ctas", host_ctas),
                         ("host_steps", host_steps)):
        check_positive_int(label, value)
    if k % 8:
        raise InvalidArgumentError(f"K = {k} must be a multiple of 8")
    if not 0 <= n_hbm <= n_rows:
        raise InvalidArgumentError(f"n_hbm = {n_hbm} must be in [0, {n_rows}]")
    if host_steps > HOST_STEPS_MAX:
        raise InvalidArgumentError(f"host_steps = {host_steps} exceeds the kernel's {HOST_STEPS_MAX}")
    nt = batch_tiles(batch)
    check_host_stage(host_stage)
    depth = default_hbm_depth(nt, smem_limit, host_stage) if hbm_depth is None else hbm_depth
    if not is_int(depth) or not 1 <= depth <= HBM_DEPTH_MAX:
        raise InvalidArgumentError(f"hbm_depth must be an integer in 1..{HBM_DEPTH_MAX}, got {depth!r}")
    ksteps = -(-k // TILE_K)
    n_host = n_rows - n_hbm
    rows_g = HBM_ROWS[nt]
    tiles_h = -(-n_host // HOST_ROWS)
    blocks_g = -(-n_hbm // rows_g)
    smem = smem_bytes(nt, hbm=blocks_g > 0, host=tiles_h > 0, hbm_depth=depth, host_steps=host_steps,
                      host_stage=host_stage)
    if smem + static_smem(nt, host_stage) > smem_limit:
        raise InvalidArgumentError(fit_error(
            nt, batch, smem, smem_limit, hbm_depth=depth if blocks_g else None,
            host_steps=host_steps if tiles_h else None, forced_depth=hbm_depth is not None,
            host_stage=host_stage))
    per_sm = MIN_CTAS_PER_SM[nt]
    mma_cap = mma_bytes_per_us(nt, per_sm)

    h, sh, units_h = 0, 1, 0
    if tiles_h:
        h_max = min(host_ctas, slots - 1 if blocks_g else slots)
        if h_max < 1:
            raise InvalidArgumentError(f"no CTA slot is left for the host rows (slots = {slots})")
        # every warp should get >= 1 group of host_steps 32-k steps per split
        cap = max(1, 2 * ksteps // (WARPS * host_steps))
        window = host_steps * HOST_WINDOW_UNIT
        sh = split_h if split_h is not None else choose_split(
            tiles_h, h_max, cap, HOST_ROWS * k * 2, host_bytes_per_us,
            min(window / HOST_LATENCY_US, mma_cap), 8.0 * batch * n_host, 4.0 * batch * HOST_ROWS)
        sh = max(1, min(sh, ksteps))
        sh = -(-ksteps // -(-ksteps // sh))  # no empty split
        units_h = tiles_h * sh
        h = _balanced(units_h, h_max)
    g, sg, units_g = 0, 1, 0
    if blocks_g:
        g_max = slots - h
        cap = max(1, ksteps // (2 * depth))
        in_flight = depth * rows_g * ROW_BYTES
        sg = split_g if split_g is not None else choose_split(
            blocks_g, g_max, cap, rows_g * k * 2, hbm_bytes_per_us,
            min(in_flight / HBM_LATENCY_US, mma_cap), 8.0 * batch * n_hbm, 4.0 * batch * rows_g)
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
        ws_floats=widest * batch * n_rows, n_counters=(blocks_g + tiles_h) if widest else 0, slots=slots,
        hbm_depth=depth, smem=smem)


def check_host_stage(host_stage: object) -> int:
    if isinstance(host_stage, bool) or host_stage not in (0, 1, 2, 3):
        raise InvalidArgumentError("host_stage must be 1 (staged host groups, the default), 0 (fragments "
                                   "loaded directly), 2 (staged, next group prefetched) or 3 (groups "
                                   f"bulk-copied into shared memory), got {host_stage!r}")
    return host_stage


def default_hbm_depth(nt: int, smem_limit: int = SMEM_PER_BLOCK_OPTIN, host_stage: int = 1) -> int:
    """HBM_DEPTH[nt], lowered to the deepest ring that fits ``smem_limit``. The launch needs the
    larger of that ring and the host warps' tiles (at most host_stage_bytes(HOST_STEPS_MAX) = 40 KB,
    which fit with the static part on any GPU with >= 72 KB per CTA)."""
    best = max_hbm_depth(nt, smem_limit, host_stage)
    return max(1, min(HBM_DEPTH[nt], best))  # 1 when none fits: plan_launch says so


def fit_error(nt: int, batch: int, smem: int, limit: int, *, hbm_depth: int | None, host_steps: int | None,
              forced_depth: bool = True, what: str = "", host_stage: int = 1) -> str:
    """The message for a launch whose shared memory does not fit, naming the arguments that set it."""
    parts = []
    if hbm_depth is not None:
        parts.append(f"hbm_depth = {hbm_depth}{'' if forced_depth else ' (the default)'}")
    if host_steps is not None:
        parts.append(f"host_window = {host_steps * HOST_WINDOW_UNIT}")
    hint = ""
    if hbm_depth is not None:
        best = max_hbm_depth(nt, limit, host_stage)
        hint = f" (hbm_depth <= {best} fits)" if best else " (no HBM ring fits at this batch tile)"
    static = static_smem(nt, host_stage)
    return (f"{' with '.join(parts) or 'this launch'} needs {smem} B of dynamic + {static} B of "
            f"static shared memory per CTA of split_gemv_nt{nt} at batch {batch}{what}; the GPU allows "
            f"{limit} B per CTA{hint}")


def unit_coverage(plan: LaunchPlan, n_rows: int, k: int, n_hbm: int) -> dict[tuple[str, int, int], int]:
    """How many times each (tier, 16-row tile, k-step) is computed under ``plan``, by walking the
    kernel's unit loops in Python (the CPU tests require exactly once for every pair). HBM k-steps
    are 64-k chunks (a stage); host k-steps are 32-k steps (HOST_KSTEP), walked per warp in groups
    of host_steps as host_role does."""
    ksteps = -(-k // TILE_K)
    hsteps = -(-k // HOST_KSTEP)
    seen: dict[tuple[str, int, int], int] = {}
    n_host = n_rows - n_hbm
    rows_g = HBM_ROWS[plan.nt]
    hs = plan.host_steps
    for cta in range(plan.host_ctas):
        for unit in range(cta, plan.units_h, plan.host_ctas):
            mt, s = divmod(unit, plan.split_h)
            st0, st1 = 2 * s * plan.steps_h, min(hsteps, 2 * (s + 1) * plan.steps_h)
            if mt * HOST_ROWS >= n_host:
                continue
            for warp in range(WARPS):
                for st in range(st0 + warp * hs, st1, WARPS * hs):
                    for u in range(hs):
                        if st + u < st1:
                            key = ("host", mt, st + u)
                            seen[key] = seen.get(key, 0) + 1
    for cta in range(plan.hbm_ctas):
        nu = len(range(cta, plan.units_g, plan.hbm_ctas))
        for q in range(nu * plan.steps_g):  # the CTA's stage sequence, as the kernel walks it
            j, c = divmod(q, plan.steps_g)
            rb, s = divmod(cta + j * plan.hbm_ctas, plan.split_g)
            kc = s * plan.steps_g + c
            if kc >= ksteps:
                continue
            for tile in range(rows_g // TILE_M):
                m0 = rb * rows_g + tile * TILE_M
                if m0 < n_hbm:
                    key = ("hbm", m0 // TILE_M, kc)
                    seen[key] = seen.get(key, 0) + 1
    return seen


# ---- compiling ------------------------------------------------------------------------------------

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
    reads staged through shared memory (run 6's host scheme)."""
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

    def _ws_short(self, ws_floats: int) -> bool:
        return bool(ws_floats) and (self.ws is None or self.ws.numel() < ws_floats)

    def _counters_short(self, n_counters: int) -> bool:
        return bool(n_counters) and (self.counters is None or self.counters.numel() < n_counters)

    def needs_growth(self, ws_floats: int, n_counters: int) -> bool:
        """Whether :meth:`reserve` with these sizes would allocate."""
        return self._ws_short(ws_floats) or self._counters_short(n_counters)

    def reserve(self, ws_floats: int, n_counters: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        with self._lock:
            dev = torch.device("cuda", self.device_index)
            if self._ws_short(ws_floats):
                if self.ws is not None:
                    self._retired.append(self.ws)
                self.ws = torch.empty(ws_floats, dtype=torch.float32, device=dev)
            if self._counters_short(n_counters):
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
    from smemkit.offload.congestion import resolve_host_config

    return resolve_host_config(host_ctas, host_window, device_index, from_default=window_to_host_steps,
                               from_user=host_steps_for_window)


def split_linear(x: torch.Tensor, weight: SplitWeight, bias: torch.Tensor | None = None, *,
                 host_ctas: int | None = None, host_window: int | None = None,
                 out: torch.Tensor | None = None, scratch: SplitScratch | None = None,
                 split_g: int | None = None, split_h: int | None = None, host_load: int = 0,
                 host_stage: int = 1, hbm_depth: int | None = None,
                 ctas_per_sm: int | None = None, path: str = "auto") -> torch.Tensor:
    """``x @ W.T (+ bias)`` with ``W`` split between HBM and pinned host memory, in one kernel.

    ``x``: (..., K) bf16/fp16 CUDA tensor (the weight's dtype), contiguous; ``bias``: (N,) or None.
    ``host_ctas``: CTAs reading host rows (default: the device profile's congestion choice, else
    8); ``host_window``: bytes of host reads in flight per such CTA (8192, 16384, 24576 or
    32768; default likewise, else 16384). ``out``: an output tensor to write (shape (..., N)).
    ``split_g``/``split_h`` force the k-splits; ``hbm_depth`` the HBM pipeline depth (stages of
    HBM_ROWS x 64 k in flight per CTA, default 2); ``ctas_per_sm`` caps the CTAs per SM;
    ``host_load`` (0 ld.global.cs, 1 ld.global.nc, 2 ld.global) / ``host_stage`` (1 staged through
    shared memory, 0 fragments loaded directly, 2 staged with the next group prefetched, 3 groups
    bulk-copied into shared memory by cp.async.bulk, sm_90+: 0.4x the rate of 1) pick the
    host read variant of split_gemv.cu (the defaults 0 / 1 are run 6's measured host path; the
    others are experiments). Returns (..., N) in x's dtype.

    ``path`` (see :func:`linear_path`): ``"auto"`` runs a weight with no host rows (ratio 0) as
    the plain all-HBM product in cuBLAS (``torch.nn.functional.linear``, whose HBM stream the
    split kernel's does not match: offload_ops.json, r = 0), and otherwise whichever of the split
    kernel and the ring path (:mod:`.ring_gemm`) :func:`auto_path` predicts faster (the ring past
    8 rows); ``"kernel"`` or ``"ring"`` force one (the kernel experiments above imply ``"kernel"``);
    ``"direct"`` runs DAK's direct-access GEMM for the host rows beside cuBLAS (:mod:`.direct_gemm`,
    sm_90+, never chosen by ``"auto"``: slower than the ring at every measured batch-512 point).
    """
    m, n, k = check_split_args(x, weight, bias, out)
    from smemkit.runtime.device import require_gpu

    require_gpu()
    if weight.freed:
        raise InvalidArgumentError("the SplitWeight was freed")
    device_index = weight.device.index
    lead = tuple(x.shape[:-1])
    hc, hs = _host_config(host_ctas, host_window, device_index)  # checked on every path
    experiment = ((split_g, split_h, hbm_depth, ctas_per_sm) != (None,) * 4
                  or (host_load, host_stage) != (0, 1))
    chosen = linear_path(weight, m, path)
    if experiment and chosen != "kernel":
        if path != "auto":
            raise InvalidArgumentError(f"split_g, split_h, hbm_depth, ctas_per_sm, host_load and host_stage "
                                       f"configure the split kernel; path={path!r} does not run it")
        chosen = "kernel"
    if m and chosen == "cublas":  # what nn.Linear runs (F.linear: addmm / mm)
        if out is None:
            return torch.nn.functional.linear(x, weight.hbm, bias)
        linear_into(x.reshape(m, k), weight.hbm, bias, out.view(m, n))
        return out
    y = out if out is not None else torch.empty((*lead, n), dtype=x.dtype, device=x.device)
    if m == 0:
        return y
    x2 = x.reshape(m, k)
    y2 = y.view(m, n)
    if chosen == "ring":
        ring_linear(x2, weight, bias, y2)
        return y
    if chosen == "direct":
        direct_linear(x2, weight, bias, y2)
        return y
    scratch = scratch or default_scratch(device_index)
    for start in range(0, m, MAX_BATCH):
        stop = min(m, start + MAX_BATCH)
        _launch(x2[start:stop], y2[start:stop], weight, bias, hc, hs, scratch, split_g, split_h, host_load,
                host_stage, hbm_depth, ctas_per_sm)
    return y


LINEAR_PATHS = ("auto", "kernel", "ring", "direct")
@cache
def _link_rates(device_index: int) -> tuple[float, float]:
    """(B_g, B_h) in bytes/s from the GPU's device profile (the embedded H200's when none matches)."""
    from smemkit.hw.profile import select_profile
    from smemkit.offload.costmodel import hardware_from_profile

    with torch.cuda.device(device_index):
        hw = hardware_from_profile(select_profile(None)[0])
    return hw.hbm_bytes_per_s, hw.host_bytes_per_s


def linear_path(weight: SplitWeight, rows: int, path: str = "auto") -> str:
    """What ``split_linear`` runs for ``rows`` input rows: ``"cublas"`` (no host rows),
    ``"kernel"`` (split_gemv.cu), ``"ring"`` (:mod:`.ring_gemm`) or ``"direct"`` (only when asked
    for, :mod:`.direct_gemm`); ``"auto"`` by
    :func:`auto_path` (the kernel when a ring slot cannot hold 16 weight rows), else the path
    asked for. Past 8 rows the ring was the faster at 28 of 32 points of batch 16 and 32
    (``offload_ops_batch16_32.json``; the four others at most 7 % slower) and at all 28 of batch 64."""
    if path not in LINEAR_PATHS:
        raise InvalidArgumentError(f"path={path!r}; allowed: {', '.join(LINEAR_PATHS)}")
    if path != "auto":
        return path
    n, k = weight.shape
    elem = weight.dtype.itemsize
    host_bytes = weight.host_rows * k * elem
    fixed = fixed_path(rows, host_bytes, k, elem)
    if fixed is not None:  # the link rates (the GPU's profile) are looked up only when needed
        return fixed
    return auto_path(rows, weight.n_hbm * k * elem, host_bytes, *_link_rates(weight.device.index), k, elem)


def _launch(x: torch.Tensor, y: torch.Tensor, w: SplitWeight, bias: torch.Tensor | None, host_ctas: int,
            host_steps: int, scratch: SplitScratch, split_g: int | None, split_h: int | None,
            host_load: int, host_stage: int, hbm_depth: int | None = None,
            ctas_per_sm: int | None = None) -> LaunchPlan:
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
    hc, hs = _host_config(host_ctas, host_window, weight.device.index)
    n, k = weight.shape
    return plan_for(n, k, x_rows, weight.n_hbm, weight.dtype, weight.device.index, host_ctas=hc,
                    host_steps=hs, host_load=host_load, host_stage=host_stage, split_g=split_g,
                    split_h=split_h, hbm_depth=hbm_depth, ctas_per_sm=ctas_per_sm)


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
            plan = plan_for(n, k, b, w.n_hbm, w.dtype, device_index, host_ctas=self._host[0],
                            host_steps=self._host[1])
            need_ws, need_counters = max(need_ws, plan.ws_floats), max(need_counters, plan.n_counters)
        self.scratch.reserve(need_ws, need_counters)
        if w.host_rows:
            host_ring(w.device, w.dtype)  # the current stream's ring (captures allocate their own)

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
