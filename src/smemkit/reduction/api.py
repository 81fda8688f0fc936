"""Public reduction-reuse ops on torch tensors, and how a variant is picked.

By default an op runs what the cost model (:mod:`.cost_model`, CREDIT Eq. 3-9) predicts fastest
from the embedded measurement table of this GPU's profile (:mod:`.tables`): the best cluster
size when ΔT > 0, else the non-cluster kernel the table timed fastest at that shape, or smemkit's
Triton kernel where the table timed it faster than that pick (``cost_model.dispatch_choice``). Shapes the
table does not cover (another width, rows outside a factor of two of the table's, a user spec,
a GPU without a table) fall back to :func:`choose_variant`, a simple rule from the H200
measurements (docs/reduction.md). ``explain()`` shows the model's terms;
``variant=``/``cluster_size=`` override everything; ``autotune=True`` measures instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache, lru_cache

import torch

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import autotune as tuning
from smemkit.reduction.codegen import VARIANTS, Variant, parse_variant_name
from smemkit.reduction.kernels import (
    CLUSTER_SIZES,
    launch,
    legality,
    prepare,
    regs_variant,
    triton_unavailable,
)
from smemkit.reduction.spec import ReductionSpec
from smemkit.reduction.workloads import BUILTIN
from smemkit.runtime.device import NON_PORTABLE_CLUSTER_MAX

# Slices at or below this many bytes of shared memory per CTA leave room for three CTAs per SM.
PREFERRED_SLICE_BYTES = 72 * 1024
# The regs builds the non-cluster set includes: 256 threads (rows up to 4K) and 512 (up to 8K).
# The 1024-thread build (up to 16K) is left out: in benchmarks/results/h200/reduction.json it is the
# fastest non-cluster kernel only at layernorm_bwd and pearson_bwd 16K, by 1.2 % and 1.6 %.
REGS_THREADS = (256, 512)
# Kinds selectable by name with another thread count ("reread_l2_t512", "regs_t512", "reread_t512").
THREADED = ("reread_l2", "regs", "reread")


def non_cluster_variants(spec: ReductionSpec, N: int, smem_limit: int) -> list[Variant]:
    """The non-cluster kernels legal at width N: staged, reread at 256 and (full occupancy) 512
    threads, reread_l2 at 1024 and 512 threads (persistent and one CTA per row), and regs at 256
    and 512 threads when the row fits their registers."""
    candidates = [Variant("staged"), Variant("reread"), Variant("reread", threads=512),
                  *(Variant("reread_l2", threads=t, per_row=r) for t in (1024, 512) for r in (False, True)),
                  *(regs_variant(N, t) for t in REGS_THREADS)]
    return [v for v in candidates if legality(spec, v, N, smem_limit, 1) is None]


def legal_variants(spec: ReductionSpec, N: int, smem_limit: int, max_cluster: int,
                   prefetch: bool = False) -> list[Variant]:
    """Every variant that can run at width N on a GPU with these limits (with ``prefetch``, also
    the double-buffered staged_pf / cluster_pf ones, which need twice the slice), smemkit's
    Triton kernel included where it has one."""
    candidates = non_cluster_variants(spec, N, smem_limit) + [Variant("triton")]
    candidates += [Variant("cluster", P) for P in CLUSTER_SIZES]
    if prefetch:
        candidates += [Variant("staged", prefetch=True)]
        candidates += [Variant("cluster", P, prefetch=True) for P in CLUSTER_SIZES]
    return [v for v in candidates if legality(spec, v, N, smem_limit, max_cluster) is None]


def choose_variant(spec: ReductionSpec, N: int, smem_limit: int, max_cluster: int) -> Variant:
    """The rule for shapes without a model table entry: stage the row in one CTA when its slice
    leaves room for three CTAs per SM, else split it over the smallest cluster whose slices do,
    else the largest legal cluster, else the one-CTA staged kernel, else re-read global memory."""
    from smemkit.reduction.kernels import smem_per_cta

    legal = legal_variants(spec, N, smem_limit, max_cluster)
    for v in legal:
        if v.kind == "staged" and smem_per_cta(spec, v, N) <= PREFERRED_SLICE_BYTES:
            return v
    for v in legal:
        if v.kind == "cluster" and smem_per_cta(spec, v, N) <= PREFERRED_SLICE_BYTES:
            return v
    clusters = [v for v in legal if v.kind == "cluster"]
    if clusters:
        return clusters[-1]  # the largest legal P: the smallest slices
    return next((v for v in legal if v.kind == "staged"), Variant("reread"))


def model_variant(spec: ReductionSpec, M: int, N: int, profile_name: str) -> Variant | None:
    """The cost model's pick at (M, N) from the profile's embedded table: the point of this
    built-in workload at width N whose rows are within a factor of two of M; None without one."""
    if spec is not BUILTIN.get(spec.name):  # a user spec never borrows a built-in's table
        return None
    return _table_pick(spec.name, M, N, profile_name)


@lru_cache(maxsize=4096)
def _table_pick(name: str, M: int, N: int, profile_name: str) -> Variant | None:
    from smemkit.hw.profile import builtin_profiles
    from smemkit.reduction.cost_model import dispatch_choice, evaluate
    from smemkit.reduction.tables import OWN_KERNELS, table_for

    if profile_name not in OWN_KERNELS:
        return None
    points = [p for p in table_for(profile_name) if (p.workload, p.shape.N) == (name, N)
              and p.shape.M / 2 <= M <= p.shape.M * 2]
    if not points:
        return None
    point = min(points, key=lambda p: abs(p.shape.M - M))
    verdict = evaluate(point.shape, builtin_profiles()[profile_name], point.measured)
    measured = point.measured
    if triton_unavailable(BUILTIN[name]):  # weigh only what can run here: the model's pick
        measured = replace(measured, triton_ms=None)
    kind, P = dispatch_choice(verdict, measured)
    if kind == "baseline":
        return variant_from_label(point.measured.baseline_variant, N)
    return Variant(kind, P)


def variant_from_label(label: str, N: int) -> Variant:
    """The non-cluster Variant a table names by label ("staged", "reread_l2_t512_rows", "regs_v2_t512")."""
    kind, threads, prefetch, per_row = parse_variant_name(label)
    if kind == "regs":
        return regs_variant(N, threads)
    return Variant(kind, threads=threads, prefetch=prefetch, per_row=per_row)


@cache
def _profile_name(device: int) -> str | None:
    """The embedded profile that describes GPU ``device`` (None when none does), looked up once."""
    from smemkit.hw.profile import profile_for_gpu_name

    return profile_for_gpu_name(torch.cuda.get_device_name(device))


def default_variant(spec: ReductionSpec, M: int, N: int, info, device: int) -> Variant:
    """What an op runs on GPU ``device`` without overrides: the model's pick where the table of
    that GPU's profile covers the shape (and it is legal here), else the rule."""
    name = _profile_name(device)
    picked = model_variant(spec, M, N, name) if name else None
    if picked is not None and legality(spec, picked, N, info.smem_per_block_optin,
                                       NON_PORTABLE_CLUSTER_MAX) is None:
        return picked
    return choose_variant(spec, N, info.smem_per_block_optin, NON_PORTABLE_CLUSTER_MAX)


def kernel_pays_off(spec: ReductionSpec, M: int, N: int, device: torch.device) -> bool:
    """Whether a generated kernel is the right tool for (M, N) on ``device``: an sm_90+ GPU, and
    not the one-CTA-per-row re-read kernel on fewer rows than SMs (a huge single row would then
    stream through one CTA; PyTorch's split reductions do better there)."""
    from smemkit.runtime.device import gpu_info

    index = device.index if device.index is not None else torch.cuda.current_device()
    info = gpu_info(index)
    if not info.supports_clusters:
        return False
    chosen = default_variant(spec, M, N, info, index)
    return chosen.kind != "reread" or M >= info.sm_count


def resolve_variant(spec: ReductionSpec, M: int, N: int, device: torch.device, variant: str | None,
                    cluster_size: int | None) -> Variant:
    from smemkit.reduction.kernels import require_kernel_support

    index = device.index if device.index is not None else torch.cuda.current_device()
    info = require_kernel_support(index)
    if variant is None and cluster_size is None:
        return default_variant(spec, M, N, info, index)
    kind, threads, prefetch, per_row = parse_variant_name(variant or "cluster")
    if (kind not in VARIANTS or (prefetch and kind not in ("staged", "cluster"))
            or (per_row and kind != "reread_l2")
            or (threads and (kind not in THREADED or threads not in (256, 512, 1024)))
            or (kind == "reread" and threads not in (0, 256, 512))
            or (variant or "").startswith("regs_v")):
        allowed = [*VARIANTS, "staged_pf", "cluster_pf", "reread_t512", "reread_l2_t512", "reread_l2_rows",
                   "reread_l2_t512_rows", "regs_t512", "regs_t256"]
        raise InvalidArgumentError(f"variant {variant!r}; allowed: {', '.join(allowed)}")
    if kind == "cluster":
        P = cluster_size or 8
        if P not in CLUSTER_SIZES:
            raise InvalidArgumentError(f"cluster_size {P}; allowed: {CLUSTER_SIZES}")
        return Variant("cluster", P, prefetch=prefetch)
    if cluster_size not in (None, 1):
        raise InvalidArgumentError(f"cluster_size={cluster_size} only applies to variant='cluster'")
    chosen = variant_from_label(variant, N)  # a triton variant that cannot run here: launch says why
    if chosen.kind == "regs":  # at the threads variant_from_label settled on (the kind's default for 0)
        from smemkit.reduction.kernels import check_regs_width

        check_regs_width(N, chosen.threads)
    return chosen


def run(spec: ReductionSpec, tensors: Mapping[str, torch.Tensor], scalars: Mapping[str, float] | None = None,
        *, variant: str | None = None, cluster_size: int | None = None,
        out: Mapping[str, torch.Tensor] | None = None, autotune: bool | None = None
        ) -> dict[str, torch.Tensor]:
    """Run any spec (built-in or user-written) and return its outputs by name.

    With ``autotune=True`` (or ``SMEMKIT_AUTOTUNE=1``) and no explicit variant, the first call
    at a (GPU, spec, row class, width) times every legal variant and records the fastest. That
    timing synchronises the GPU and returns any L2 lines kept with a persisting / evict_last
    policy to normal priority (``runtime.timing``), the caller's own set-aside lines included.
    """
    prepared = prepare(spec, tensors, scalars or {}, out)
    device = next(iter(prepared.outputs.values())).device
    if variant is None and cluster_size is None and prepared.M and tuning.enabled(autotune):
        chosen = _autotuned(spec, prepared, device)
    else:
        chosen = resolve_variant(spec, prepared.M, prepared.N, device, variant, cluster_size)
    launch(spec, chosen, prepared)
    return prepared.outputs


def _autotuned(spec: ReductionSpec, prepared, device: torch.device) -> Variant:
    from smemkit.reduction.kernels import require_kernel_support
    from smemkit.runtime.timing import time_gpu

    index = device.index if device.index is not None else torch.cuda.current_device()
    info = require_kernel_support(index)
    candidates = legal_variants(spec, prepared.N, info.smem_per_block_optin, NON_PORTABLE_CLUSTER_MAX,
                                prefetch=True)

    def time_ms(v: Variant) -> float:
        with torch.cuda.device(index):  # events, flush and stream of the tensors' GPU
            return time_gpu(lambda: launch(spec, v, prepared), warmup=2, reps=10, graph=True).median_ms

    return tuning.tuned_variant(spec, prepared.M, prepared.N, info.name, candidates, time_ms)


def layernorm_bwd(x: torch.Tensor, dy: torch.Tensor, gamma: torch.Tensor, *, eps: float = 1e-5,
                  variant: str | None = None, cluster_size: int | None = None) -> torch.Tensor:
    """dx of LayerNorm over the last dimension of (M, N) x, statistics recomputed from x."""
    return run(BUILTIN["layernorm_bwd"], {"x": x, "dy": dy, "gamma": gamma}, {"eps": eps},
               variant=variant, cluster_size=cluster_size)["dx"]


def wvar_bwd(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor, *, eps: float = 1e-5,
             variant: str | None = None, cluster_size: int | None = None) -> torch.Tensor:
    """dx of the weighted standardisation (x - mu_w) * r_w, row-wise."""
    return run(BUILTIN["wvar_bwd"], {"x": x, "w": w, "dy": dy}, {"eps": eps},
               variant=variant, cluster_size=cluster_size)["dx"]


def pearson_bwd(x: torch.Tensor, y: torch.Tensor, g: torch.Tensor, *, variant: str | None = None,
                cluster_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dy) of g[row] * pearson_r(x[row], y[row])."""
    res = run(BUILTIN["pearson_bwd"], {"x": x, "y": y, "g": g}, variant=variant,
              cluster_size=cluster_size)
    return res["dx"], res["dy"]


def softmax_bwd(z: torch.Tensor, dy: torch.Tensor, *, variant: str | None = None,
                cluster_size: int | None = None) -> torch.Tensor:
    """dz of softmax over the last dimension, p recomputed from the logits z."""
    return run(BUILTIN["softmax_bwd"], {"z": z, "dy": dy}, variant=variant,
               cluster_size=cluster_size)["dz"]


def lars(w: torch.Tensor, g: torch.Tensor, v: torch.Tensor, *, lr: float, momentum: float,
         weight_decay: float, eta: float, variant: str | None = None,
         cluster_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """One LARS step per row: returns (w_new, v_new)."""
    res = run(BUILTIN["lars"], {"w": w, "g": g, "v": v},
              {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "eta": eta},
              variant=variant, cluster_size=cluster_size)
    return res["w_new"], res["v_new"]


def quant_int8(x: torch.Tensor, *, variant: str | None = None,
               cluster_size: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Row-wise symmetric int8 quantisation: returns (q int8 (M, N), scale float32 (M,))."""
    res = run(BUILTIN["quant_int8"], {"x": x}, variant=variant, cluster_size=cluster_size)
    return res["q"], res["scale"]
