"""CREDIT's profitability model (paper §III-D, Eq. 3-9): does the cluster variant pay, and at which P?

Every term is a time in milliseconds for the whole (M, N) problem:

- legality (Eq. 3): the slice of the staged inputs and columns, plus fixed scratch, fits the
  per-CTA shared-memory limit;
- T_save (Eq. 7): the time the cluster kernel saves over the best non-cluster kernel at this
  shape (one timing of it, T_B). When that kernel re-reads HBM (``reread``, the paper's
  baseline, whose rows in flight overflow the L2: ``rereads_from_hbm``): the re-read time at its
  *achieved* bandwidth, T_B x b_reread / b_B. When it reads every element once from HBM
  (``staged``, ``regs``; ``reread_l2``, whose re-reads are meant to hit L2; a re-read kernel
  whose rows in flight fit the L2), there is no re-read to save, only stall: with few CTAs resident per SM, a
  CTA's phases (stream in and reduce, barrier, replay and write) run one after the other and too
  little else on the SM keeps HBM busy in between, whereas the cluster's slices leave room for
  more CTAs per SM whose phases overlap. T_save is then the baseline's time above the streaming
  floor, T_B - M x N x (b_B - b_reread) / B_HBM, when the baseline holds at most
  SINGLE_READ_MAX_CTAS_PER_SM CTAs per SM at once, and 0 above (its own CTAs overlap enough).
  A baseline that holds its row on chip (``staged``, ``regs``) counts its CTAs in units of
  SINGLE_READ_CTA_THREADS threads, the staged kernels' size: a 512-thread regs CTA keeps as many
  warps streaming as two staged ones. Counted as CTAs, two 512-thread regs CTAs per SM made the
  model predict P = 2 to pay at 8K (layernorm_bwd, softmax_bwd) where the cluster kernel, at the
  same 50 % occupancy (Nsight Compute), was 1-6 % slower; two H200 evaluations scored 27 and 26
  of 30 with CTAs, 28 and 29 with the unit (commits 9c4bf75, b38d180).
  The one-CTA-per-row re-read kernel (``reread``, ``reread_t512``) counts in those units too: at
  three 512-thread CTAs per SM, counted as CTAs, lars 4K would get a stall credit that the table
  measured the cluster kernel not to save. Rescoring the three recorded H200 evaluations with
  that count leaves them identical (29, 29 and 28 of 30), since their one re-read baseline (lars
  4K, four CTAs per SM) is above the limit under either count; a CPU test holds the three-CTA
  case. Every ``reread_l2`` form (persistent and ``_rows``) stays counted in CTAs: all in
  threads scored 19-20 of 30, the ``_rows`` forms alone 27, 29 and 27 (commit 2e75e66).
  This is smemkit's extension: the paper applies Eq. 7 to either baseline, and all its
  remaining errors were at staged-baseline points. The limit is 3: an H200 evaluation timed in
  both modes scores 29/30 with it (22/30 with a limit of 1), and three evaluations with the
  warm-up timing, measured after the choice, 28/30 (23-24/30 with 1) (commits ad505fb, ec6845a,
  4ccc825); graph-timed data, which measured the cluster kernels 2-9 % slow, favoured 1
  (commit d1679d0); docs/reduction.md;
- T_ctrl: the excess time of a work-free control kernel with the same grid, P, dynamic shared
  memory and exchanges, over a one-CTA control (measured; see ``control`` variants in codegen);
- W(M, P) (Eq. 8): sequential cluster waves, ceil(M / resident clusters);
- T_replay (Eq. 8): re-reading the staged slice from shared memory, W x ceil(N/P) x b_keep /
  (f x local read rate), less the share of the slice the first pass reads while the staged inputs
  it does not read still arrive (smemkit's kernels wait per input there: ``spec.staged_late``;
  the stream of the rest at HBM speed outlasts that shared-memory read). smemkit's extension,
  for the kernels with per-input barriers: they beat T_B at wvar_bwd / softmax_bwd 16K by 4.5 /
  2.5 % where the whole replay predicted a loss (commit dc4f682);
- T_deposit: the part of the staging store not hidden under the input stream,
  W x slice bytes x max(1/local store rate - 1/per-SM source rate, 0) / f;
- T_DSM (Eq. 8): remote stores of the partials, W x s x (P - 1) x sum(q_l) / (f x remote store rate);
- k: the cluster kernel's CTAs resident per SM at once (min(resident clusters, M) x P / SMs, at
  least 1).
  While one CTA waits at a barrier or replays its slice, the other k - 1 on its SM keep streaming,
  so only 1/k of the overhead terms shows in the kernel's time. smemkit's extension (the paper
  charges them whole, as with one staged CTA per SM, where k = 1). On the H200 evaluations timed
  in both modes or with the warm-up (four): 29, 28, 28, 28 of 30 points, against 16, 20, 20, 20
  with the overheads whole; on the three graph-timed ones, which measured the cluster kernels
  slow: 17, 22, 22 against 23, 23, 22 (docs/reduction.md);
- ΔT (Eq. 9) = T_save - (T_ctrl + T_replay + T_deposit + T_DSM) / k: the cluster variant is
  predicted to beat the non-cluster kernel when ΔT > 0. N* is the smallest width with ΔT > 0 for
  a legal P.
- The predicted P: the smallest P whose ΔT (> 0) is within P_TIE_FRACTION of T_B of the largest.
  The per-P ΔT misses the measured T_B - T_cluster by 6.7-7.8 % of T_B at the median (three H200
  evaluations, every P predicted to pay), so closer ΔTs do not rank the sizes; and where the
  largest ΔT's P was not the measured best (10 of 20 profitable points in one H200 evaluation,
  commit 805efcb), it was always a larger P than the best (more peers to wait for per exchange,
  eight-CTA clusters packed unevenly into GPCs: not in the terms). With the rule, the picked P is
  the measured best at 16 of 20 in each of four evaluations (10-13 without) and within 5.5 % of it
  at every point (up to 8-12 % slower without: layernorm_bwd 64K's P = 16). smemkit's extension,
  for its own kernels (``shape_of``): the paper takes the largest ΔT, as the ablation does, and so
  does CREDIT's H100 table, where the largest measured P (8) was the fastest at every 64K point
  and the rule would pick smaller, slower ones.

Where the driver's occupancy was not measured, the resident clusters come from the tiling part's
occupancy calculator (:func:`resident_estimate`).

The ablation ("peak bandwidth + serialized staging", paper Table V) replaces the achieved
bandwidth by the profile's HBM bandwidth in T_save, charges the whole staging store, and overlaps
nothing (k = 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from smemkit.hw.profile import DeviceProfile
from smemkit.reduction.kernels import CLUSTER_SIZES, L2_BUDGET_FRACTION, smem_per_cta
from smemkit.reduction.spec import ReductionSpec
from smemkit.reduction.variant import Variant, default_threads, parse_variant_name
from smemkit.tiling.occupancy import device_limits, resident_clusters

SCALAR_BYTES = 4
# T_save against a single-read baseline: its stall counts when it holds at most this many CTAs
# per SM at once (module docstring)
SINGLE_READ_MAX_CTAS_PER_SM = 3
# ... counted, for the baselines of THREAD_UNIT_KINDS, in CTAs of this many threads (so a regs
# baseline at full occupancy, 1024-2048 threads per SM, is 4-8 units: no stall credit unless its
# grid is smaller than the GPU)
SINGLE_READ_CTA_THREADS = 256
THREAD_UNIT_KINDS = ("staged", "regs", "reread")  # the baselines counted in those units
# cluster sizes whose ΔT are within this fraction of T_B count as a tie, won by the smaller P
P_TIE_FRACTION = 0.05


@dataclass(frozen=True)
class KernelShape:
    """What the model needs to know about a workload's kernels at (M, N).

    ``baseline_bytes`` (b_B) and ``reread_bytes`` (b_reread) are per element for the global
    re-read kernel; ``keep_bytes`` (b_keep) what the cluster kernel stages; ``smem_per_cta(P)``
    its shared memory per CTA (Eq. 3); ``stats`` the partials per stage (q_l).
    """

    M: int
    N: int
    baseline_bytes: float
    reread_bytes: float
    keep_bytes: float
    stats: tuple[int, ...]
    smem_per_cta: Callable[[int], int]
    early_replay_share: float = 0.0  # of the staged slice, replayed under the stream of the rest
    # ΔTs within this fraction of T_B are a tie won by the smaller P: smemkit's kernels
    # (P_TIE_FRACTION); 0 for other kernels (CREDIT's H100 table: the largest ΔT, as the paper)
    p_tie_fraction: float = 0.0


def shape_of(spec: ReductionSpec, M: int, N: int) -> KernelShape:
    """The kernel shape of a spec's generated variants."""
    b = spec.bytes
    early = 1 - len(spec.staged_late) / len(spec.staged_inputs) if spec.staged_late else 0.0
    return KernelShape(M, N, b.baseline, b.reread, b.keep, b.stats_per_stage,
                       lambda P: smem_per_cta(spec, Variant("cluster", P), N), early, P_TIE_FRACTION)


@dataclass(frozen=True)
class Measured:
    """The timings the model needs at one shape: T_B and T_ctrl per P (ms), which non-cluster
    kernel T_B timed (its variant label; ``rereads_from_hbm`` says from it whether the kernel
    re-reads HBM), how many of its CTAs were resident per SM at once, and, when known, the resident
    clusters per P (driver occupancy; otherwise estimated from shared memory) and the time of
    smemkit's Triton kernel at the shape (not a model input: dispatch compares it with the
    model's pick, ``dispatch_choice``)."""

    baseline_ms: float
    control_excess_ms: Mapping[int, float]
    resident_clusters: Mapping[int, int] | None = None
    baseline_variant: str = "reread"
    baseline_ctas_per_sm: float | None = None
    triton_ms: float | None = None


def rereads_from_hbm(shape: KernelShape, profile: DeviceProfile, measured: Measured) -> bool:
    """Whether T_B's kernel re-reads from HBM, so that the paper's Eq. 7 applies. Only a re-read
    kernel (``reread``, ``reread_t512``: one CTA per row) can, and it does unless its rows in
    flight (its CTAs per SM at once x SMs, when measured) fit their re-read bytes into the L2
    share ``reread_l2`` sizes its grid by (kernels.L2_BUDGET_FRACTION): then its re-reads hit the
    L2, as ``reread_l2``'s do by construction, and it counts as reading once. Unmeasured residency
    (CREDIT's H100 table) keeps the paper's convention."""
    if parse_variant_name(measured.baseline_variant)[0] != "reread":
        return False
    if measured.baseline_ctas_per_sm is None:
        return True
    in_flight = measured.baseline_ctas_per_sm * profile.sm_count * shape.N * shape.reread_bytes
    return in_flight > L2_BUDGET_FRACTION * profile.l2_bytes


@dataclass(frozen=True)
class Terms:
    """The model's terms for one cluster size (all ms); ``legal`` False leaves them at 0."""

    P: int
    legal: bool
    reason: str | None
    waves: int = 0
    t_save: float = 0.0
    t_ctrl: float = 0.0
    t_replay: float = 0.0
    t_deposit: float = 0.0
    t_dsm: float = 0.0
    ctas_per_sm: float = 1.0  # k: the overheads' share that shows is 1 / k

    @property
    def delta(self) -> float:
        """ΔT (Eq. 9, overheads over k); -inf when the size is illegal."""
        if not self.legal:
            return -math.inf
        return self.t_save - (self.t_ctrl + self.t_replay + self.t_deposit + self.t_dsm) / self.ctas_per_sm


@dataclass(frozen=True)
class Verdict:
    """The decision at one shape: every term, and the best P (None when no P is legal; it pays
    only when ``profitable``)."""

    terms: tuple[Terms, ...]
    tie_ms: float = 0.0  # ΔTs closer than this to the largest are a tie, won by the smaller P

    @property
    def best(self) -> Terms | None:
        """The legal P with the largest ΔT, or, when that ΔT is positive, the smallest P whose ΔT is
        also positive and within ``tie_ms`` of it (module docstring)."""
        legal = [t for t in self.terms if t.legal]
        top = max(legal, key=lambda t: t.delta, default=None)
        if top is None or top.delta <= 0:
            return top
        return min((t for t in legal if t.delta > 0 and t.delta >= top.delta - self.tie_ms),
                   key=lambda t: t.P)

    @property
    def profitable(self) -> bool:
        best = self.best
        return best is not None and best.delta > 0


def resident_estimate(shape: KernelShape, P: int, profile: DeviceProfile, threads: int = 256) -> int:
    """Clusters resident at once when the driver's occupancy is not known: the theoretical
    occupancy (:func:`smemkit.tiling.occupancy.resident_clusters`) of ``threads``-thread CTAs with
    the cluster kernel's shared memory, registers not counted (unknown before compiling); at
    least 1. A P that cannot launch (its shared memory or cluster size above the GPU's limits,
    which ``evaluate`` reports as illegal) gets 1."""
    need = shape.smem_per_cta(P)
    lim = device_limits(profile.compute_capability, sm_count=profile.sm_count,
                        smem_per_sm=profile.smem_per_sm_bytes, smem_per_block=profile.smem_per_block_bytes,
                        max_cluster=profile.max_cluster_size)
    if need > lim.smem_per_block_optin or P > profile.max_cluster_size:
        return 1
    return max(1, resident_clusters(lim, profile.sm_count, threads, 0, need, P))


def stall_units(measured: Measured) -> float | None:
    """The single-read baseline's residency that SINGLE_READ_MAX_CTAS_PER_SM limits: its CTAs per
    SM, counted in CTAs of SINGLE_READ_CTA_THREADS threads for a kind of THREAD_UNIT_KINDS (None
    when unknown)."""
    per_sm = measured.baseline_ctas_per_sm
    kind, threads, _, _ = parse_variant_name(measured.baseline_variant)
    if per_sm is not None and kind in THREAD_UNIT_KINDS:
        per_sm *= (threads or default_threads(kind)) / SINGLE_READ_CTA_THREADS
    return per_sm


def stall_counted(measured: Measured) -> bool:
    """Whether a single-read baseline's stall counts as T_save: ``stall_units`` at most
    SINGLE_READ_MAX_CTAS_PER_SM (not when its residency is unknown: the conservative choice)."""
    units = stall_units(measured)
    return units is not None and units <= SINGLE_READ_MAX_CTAS_PER_SM


def single_read_save(shape: KernelShape, profile: DeviceProfile, measured: Measured) -> float:
    """T_save against a baseline that reads each element once from HBM (module docstring): its
    time above the streaming floor when ``stall_counted``, else 0."""
    if not stall_counted(measured):
        return 0.0
    compulsory = shape.M * shape.N * (shape.baseline_bytes - shape.reread_bytes)
    floor_ms = compulsory / (profile.hbm_tbps * 1e12) * 1e3
    return max(measured.baseline_ms - floor_ms, 0.0)


def evaluate(shape: KernelShape, profile: DeviceProfile, measured: Measured,
             sizes: Iterable[int] = CLUSTER_SIZES, ablation: bool = False) -> Verdict:
    """Every term of Eq. 3-9 for each cluster size in ``sizes``."""
    M, N = shape.M, shape.N
    f_hz = profile.sm_clock_ghz * 1e9
    prim = profile.dsmem
    rereads = rereads_from_hbm(shape, profile, measured)
    # the P-independent parts: T_save, and the staging store's cost per byte not hidden under the
    # input stream (the baseline's achieved per-SM rate stands for the source's)
    if ablation:
        t_save = M * N * shape.reread_bytes / (profile.hbm_tbps * 1e12) * 1e3
    else:
        t_save = single_read_save(shape, profile, measured) if not rereads else (
            measured.baseline_ms * shape.reread_bytes / shape.baseline_bytes)
        moved = shape.baseline_bytes if rereads else shape.baseline_bytes - shape.reread_bytes
        achieved = M * N * moved / (measured.baseline_ms * 1e-3)  # B/s the baseline streamed
        source_bpc = achieved / (f_hz * profile.sm_count)
        excess = max(1 / prim.local_store_bpc - 1 / source_bpc, 0.0)
    terms = []
    for P in sizes:
        need = shape.smem_per_cta(P)
        reason = None
        if P > profile.max_cluster_size:
            reason = f"cluster size {P} exceeds the GPU's maximum {profile.max_cluster_size}"
        elif need > profile.smem_per_block_bytes:
            reason = (f"needs {need} B of shared memory per CTA, above the "
                      f"{profile.smem_per_block_bytes} B limit (Eq. 3)")
        elif P not in measured.control_excess_ms:
            reason = f"no control-kernel timing for P = {P} at this shape"
        if reason is not None:
            terms.append(Terms(P, False, reason))
            continue
        resident = (measured.resident_clusters or {}).get(P) or resident_estimate(shape, P, profile)
        waves = math.ceil(M / resident)
        slice_bytes = math.ceil(N / P) * shape.keep_bytes
        if ablation:
            t_deposit = waves * slice_bytes / (f_hz * prim.local_store_bpc) * 1e3
        else:
            t_deposit = waves * slice_bytes * excess / f_hz * 1e3
        replayed = slice_bytes * (1.0 if ablation else 1.0 - shape.early_replay_share)
        t_replay = waves * replayed / (f_hz * prim.local_read_bpc) * 1e3
        t_dsm = waves * SCALAR_BYTES * (P - 1) * sum(shape.stats) / (f_hz * prim.remote_store_bpc) * 1e3
        # k: the clusters at once (the resident ones, or M when fewer rows) x P over the SMs
        k = 1.0 if ablation else max(min(resident, M) * P / profile.sm_count, 1.0)
        terms.append(Terms(P, True, None, waves, t_save, max(measured.control_excess_ms[P], 0.0),
                           t_replay, t_deposit, t_dsm, k))
    return Verdict(tuple(terms), 0.0 if ablation else shape.p_tie_fraction * measured.baseline_ms)


def save_basis(shape: KernelShape, profile: DeviceProfile, measured: Measured) -> str:
    """Which T_save rule applies at this shape, in words (``smemkit advise``)."""
    if rereads_from_hbm(shape, profile, measured):
        return "T_B's kernel re-reads HBM: T_save = T_B x b_reread / b_B (Eq. 7)"
    units = stall_units(measured)
    if units is None:
        return "T_B's kernel reads once, its residency unknown: T_save = 0"
    kind = parse_variant_name(measured.baseline_variant)[0]
    unit = f"CTAs of {SINGLE_READ_CTA_THREADS} threads" if kind in THREAD_UNIT_KINDS else "CTAs"
    counted = units <= SINGLE_READ_MAX_CTAS_PER_SM  # stall_counted, from the units already known
    return (f"T_B's kernel reads once at {units:.2f} {unit} per SM "
            f"({'at most' if counted else 'above'} {SINGLE_READ_MAX_CTAS_PER_SM}): T_save = "
            + ("its time above the HBM streaming floor" if counted else "0, its CTAs overlap enough"))


def dispatch_choice(verdict: Verdict, measured: Measured) -> tuple[str, int]:
    """What an op runs at a measured shape: ("cluster", P) when the model predicts the cluster
    kernel faster than the non-cluster CUDA kernel (its predicted time T_B - ΔT), else
    ("baseline", 1), that CUDA kernel; ("triton", 1) instead when smemkit's Triton kernel was
    timed faster than the pick's (predicted) time."""
    if verdict.profitable:
        pick, predicted_ms = ("cluster", verdict.best.P), measured.baseline_ms - verdict.best.delta
    else:
        pick, predicted_ms = ("baseline", 1), measured.baseline_ms
    if measured.triton_ms is not None and measured.triton_ms < predicted_ms:
        return ("triton", 1)
    return pick


def crossover(verdicts: Mapping[int, Verdict]) -> int | None:
    """N*: the smallest width whose verdict is profitable (None when none is)."""
    return min((N for N, v in verdicts.items() if v.profitable), default=None)


def rejection(spec: ReductionSpec) -> str | None:
    """Why the cluster transformation cannot pay for ``spec`` whatever the shape (paper §III-D's
    negative controls), or None when the model should be evaluated."""
    if spec.kernel_support is not None:
        return f"rejected by construction: the workload is {spec.kernel_support}"
    if spec.bytes.reread == 0:
        return ("rejected by construction: a one-pass reduction (b_reread = 0), so staging saves "
                "no global re-read for the cluster to amortize")
    return None
