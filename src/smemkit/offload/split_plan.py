"""The split GEMV's launch plan (pure Python, tested without a GPU): the constants ``split_gemv.cu``
is built with, and :func:`plan_launch`, which turns a shape and a host configuration into a grid,
a k-split per tier, pipeline depths, shared memory and the workspace the launch needs.

The split is chosen with the tiers' time model (:mod:`.tier_model`) so that every CTA of a tier
gets the same number of units (no wave-quantization tail) at the least modelled cost. The kernel
side (compiling, occupancy, launching) is :mod:`.split_gemv`; the op is :mod:`.linear`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from smemkit.errors import InvalidArgumentError, check_positive_int, is_int
from smemkit.offload.host_window import KernelWindow
from smemkit.offload.tier_model import (
    HBM_BYTES_PER_US,
    HBM_LATENCY_US,
    HOST_BYTES_PER_US,
    HOST_LATENCY_US,
    balanced_ctas,
    choose_split,
)

# Mirrors of split_gemv.cu's constants (a CPU test checks them against the source).
THREADS = 256
WARPS = 8
TILE_M = 16
TILE_K = 64  # k per pipeline stage (128 bytes of a bf16/fp16 row)
ROW_BYTES = TILE_K * 2
HOST_ROWS = TILE_M  # rows per host unit (one 16-row tile)
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
# 4.3 TB/s x ~1-2 us loaded latency = 4-9 MB in flight = 33-65 KB per SM. On the H200, depth 2
# was faster than 3 at every r = 0 point of a sweep of both (e.g. 8192x28672, B = 1: 1.19x
# cuBLAS's time against 1.53x) (commit cb352a7).
HBM_DEPTH = {1: 2, 2: 2, 4: 2, 8: 2}
# Static shared memory of split_gemv_nt{nt}: the host role's cross-warp sum, the HBM ring's full
# and empty mbarriers (HBM_DEPTH_MAX + 1 slots each) and the last-CTA flag.
STATIC_SMEM = {nt: WARPS * nt * 4 * 32 * 4 + 2 * 8 * (HBM_DEPTH_MAX + 1) + 16 for nt in BATCH_TILES}
HOST_BARRIER_SMEM = 8 * WARPS  # host_stage = 3: one mbarrier per warp (static, on top of STATIC_SMEM)
SMEM_PER_BLOCK_OPTIN = 232448  # H100/H200: 227 KB per CTA (static + dynamic)
MMA_MACS_PER_US_PER_SM = 1.0e6  # mma.sync m16n8k16 incl. LDS issue, ~1/4 of the dense bf16 peak, per SM


def static_smem(nt: int, host_stage: int = 1) -> int:
    """Static shared memory of split_gemv_nt{nt} built with ``host_stage``."""
    return STATIC_SMEM[nt] + (HOST_BARRIER_SMEM if host_stage == 3 else 0)


def batch_tiles(batch: int) -> int:
    """Batch tiles of 8 the kernel is instantiated with for ``batch`` rows (1, 2, 4 or 8)."""
    if not is_int(batch) or not 1 <= batch <= MAX_BATCH:
        raise InvalidArgumentError(f"batch must be an integer in 1..{MAX_BATCH} per launch, got {batch!r}")
    for nt in BATCH_TILES:
        if batch <= 8 * nt:
            return nt
    raise AssertionError("unreachable")


HOST_WINDOW = KernelWindow(HOST_WINDOW_UNIT, HOST_STEPS_MAX,
                           f"the split kernel's window is a whole number of {HOST_WINDOW_UNIT}-byte "
                           f"k-steps per CTA of {THREADS} threads")
host_steps_for_window = HOST_WINDOW.units  # k-steps per host group for a caller's window
window_to_host_steps = HOST_WINDOW.nearest  # the nearest kernel window to a probe's window


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
        h = balanced_ctas(units_h, h_max)
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
        g = balanced_ctas(units_g, g_max)
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
