"""Per-operation offload ratios: DAK's three-phase greedy (§4.2), the uniform baseline, an oracle.

The problem: choose ``x_i`` in [0, 1] minimising ``sum_i t_i(x_i)`` subject to
``sum_i x_i W_i >= R`` (R = bytes that do not fit in the GPU budget). DAK states the constraint as
an equality; ``exact=True`` solves that version. With ``>=`` a planner may offload more than it
must, which pays whenever an HBM-bound op would finish sooner by also reading over the host link.

Both ``greedy_plan`` and ``oracle_plan`` are exact for this model; they are written differently
so that each checks the other: the greedy uses the turning points in closed form, the oracle
rebuilds every op's curve from evaluations of ``t_i`` and water-fills its linear pieces in order
of marginal cost, which is exact for any separable convex piecewise-linear objective under one
covering constraint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError
from smemkit.offload.costmodel import Hardware, Op, op_time, turning_points

GIB = 2**30


@dataclass(frozen=True)
class Plan:
    """Offload ratios for ``ops`` (same order) and what the cost model predicts for them."""

    method: str
    ratios: tuple[float, ...]
    required_bytes: float
    offloaded_bytes: float
    op_times: tuple[float, ...]

    @property
    def time_s(self) -> float:
        return math.fsum(self.op_times)


def total_bytes(ops: Sequence[Op]) -> float:
    return math.fsum(op.weight_bytes for op in ops)


def required_offload_bytes(ops: Sequence[Op], gpu_budget_bytes: float) -> float:
    """Bytes that must live in host memory when weights + KV may use ``gpu_budget_bytes`` of HBM."""
    if not (math.isfinite(gpu_budget_bytes) and gpu_budget_bytes >= 0):
        raise InvalidArgumentError(
            f"--gpu-mem must be a finite number >= 0, got {gpu_budget_bytes / GIB} GiB")
    return max(0.0, total_bytes(ops) - gpu_budget_bytes)


def _check(ops: Sequence[Op], required: float) -> None:
    if not ops:
        raise InvalidArgumentError("no operations to plan")
    if not (math.isfinite(required) and required >= 0):
        raise InvalidArgumentError(f"required offload must be a finite number of bytes >= 0, got {required}")
    held = total_bytes(ops)
    if required > held:
        raise InvalidArgumentError(
            f"infeasible: {required / GIB:.3f} GiB must be offloaded but the operations hold only "
            f"{held / GIB:.3f} GiB; the required offload may be at most the total (a GPU budget >= 0)")


def _make_plan(method: str, ops: Sequence[Op], ratios: Sequence[float], required: float,
               hw: Hardware) -> Plan:
    xs = tuple(min(1.0, max(0.0, x)) for x in ratios)
    return Plan(method=method, ratios=xs, required_bytes=required,
                offloaded_bytes=math.fsum(x * op.weight_bytes for x, op in zip(xs, ops, strict=True)),
                op_times=tuple(op_time(op, x, hw) for op, x in zip(ops, xs, strict=True)))


def _fill(y: list[float], caps: Sequence[float], need: float) -> float:
    """Add up to ``need`` bytes across ``caps`` in proportion to each cap; return what was added."""
    room = math.fsum(caps)
    if room <= 0 or need <= 0:
        return 0.0
    share = min(1.0, need / room)
    for i, cap in enumerate(caps):
        y[i] += share * cap
    return min(need, room)


def _fill_by_fraction(y: list[float], caps: Sequence[float], need: float, ops: Sequence[Op], *,
                      largest_first: bool) -> float:
    """:func:`_fill` one read fraction at a time: a byte of an op that reads a share ``f`` of its
    bytes per step moves ``f`` bytes of reads, so in phase 1 (each saves ``f/B_g``) the largest
    ``f`` goes first and in phase 3 (each costs ``f/B_h``) the smallest. Dense ops all have f = 1."""
    added = 0.0
    for f in sorted({op.read_fraction for op in ops}, reverse=largest_first):
        group = [cap if op.read_fraction == f else 0.0 for cap, op in zip(caps, ops, strict=True)]
        added += _fill(y, group, need - added)
    return added


def greedy_plan(ops: Sequence[Op], hw: Hardware, required_bytes: float, *, exact: bool = False) -> Plan:
    """DAK §4.2's greedy, phase by phase.

    1. Memory-bound first: move bytes of every op that is HBM-bound to the host until it reaches
       its first turning point (HBM time meets host time at B_h/(B_h+B_g), or meets compute time,
       whichever comes first). Each such byte saves f/B_g seconds (f the op's read fraction, 1 for
       dense ops), so with ``exact`` the ops with the largest f go first. With ``exact`` only
       ``required_bytes`` are moved;
       otherwise the phase always runs to the end, because each byte shortens the step.
    2. Compute-bound next: put what is still required on ops whose compute time hides their reads,
       up to each op's second turning point, where host time catches up with compute. These bytes
       cost nothing.
    3. The rest anywhere: past phase 2 every op is host-bound, and each further byte costs f/B_h, f the
       op's read fraction (1 for dense ops): experts ops first, then the rest, spread in proportion
       to the bytes each op still holds in HBM.

    Turning points are each op's own (``turning_points``): an op HBM-bound at x = 0 whose
    compute time exceeds ``W/(B_g+B_h)`` has a plateau, not a peak, and phase 2 uses that plateau.
    """
    _check(ops, required_bytes)
    tps = [turning_points(op, hw) for op in ops]
    w = [op.weight_bytes for op in ops]
    y = [0.0] * len(ops)
    need = required_bytes
    phase1 = [tp.lo * wi for tp, wi in zip(tps, w, strict=True)]
    need -= _fill_by_fraction(y, phase1, need if exact else math.inf, ops, largest_first=True)
    need -= _fill(y, [(tp.hi - tp.lo) * wi for tp, wi in zip(tps, w, strict=True)], max(0.0, need))
    _fill_by_fraction(y, [(1.0 - tp.hi) * wi for tp, wi in zip(tps, w, strict=True)], max(0.0, need), ops,
                      largest_first=False)
    ratios = [yi / wi if wi > 0 else 0.0 for yi, wi in zip(y, w, strict=True)]
    return _make_plan("greedy (exact budget)" if exact else "greedy", ops, ratios, required_bytes, hw)


def uniform_plan(ops: Sequence[Op], hw: Hardware, required_bytes: float) -> Plan:
    """What offloading systems do today: the same ratio, required / total, for every op."""
    _check(ops, required_bytes)
    held = total_bytes(ops)
    r = required_bytes / held if held > 0 else 0.0
    return _make_plan("uniform", ops, [r] * len(ops), required_bytes, hw)


def _pieces(op: Op, hw: Hardware) -> list[tuple[float, float]]:
    """``op``'s curve as (length in bytes, seconds per byte) pieces from x = 0 to 1, slopes sorted.

    Built from evaluations only: between the points where two of the three terms cross, the max
    of affine terms is itself affine.
    """
    w = op.weight_bytes
    if w <= 0:
        return []
    reads = op.read_bytes
    t_comp, t_hbm, t_host = op.flops / hw.flops_per_s, reads / hw.hbm_bytes_per_s, reads / hw.host_bytes_per_s
    cuts = {0.0, 1.0}
    for x in (1.0 - t_comp / t_hbm, t_comp / t_host, t_hbm / (t_hbm + t_host)):
        if 0.0 < x < 1.0:
            cuts.add(x)
    xs = sorted(cuts)
    pieces: list[tuple[float, float]] = []
    slope_floor = -math.inf
    for a, b in zip(xs, xs[1:], strict=False):
        if b <= a:
            continue
        slope = (op_time(op, b, hw) - op_time(op, a, hw)) / ((b - a) * w)
        slope_floor = max(slope_floor, slope)  # rounding must not break convexity's order
        pieces.append(((b - a) * w, slope_floor))
    return pieces


def oracle_plan(ops: Sequence[Op], hw: Hardware, required_bytes: float, *, exact: bool = False) -> Plan:
    """Exact optimum by water-filling: take every op's linear pieces cheapest-first.

    A piece with negative slope is always taken (unless ``exact``: then only until the required
    bytes are met); further pieces are taken in order of slope until ``required_bytes`` are
    offloaded. For separable convex piecewise-linear costs under one ``sum y_i >= R`` constraint
    this is optimal (any other feasible point can be improved by moving bytes from a steeper
    piece to a shallower one).
    """
    _check(ops, required_bytes)
    queue = []
    for i, op in enumerate(ops):
        for k, (length, slope) in enumerate(_pieces(op, hw)):
            queue.append((slope, i, k, length))
    queue.sort()
    y = [0.0] * len(ops)
    need = required_bytes
    for slope, i, _k, length in queue:
        if need <= 0 and (exact or slope >= 0):
            break
        take = length if not exact and slope < 0 else min(length, max(0.0, need))
        y[i] += take
        need -= take
    ratios = [yi / op.weight_bytes if op.weight_bytes > 0 else 0.0 for yi, op in zip(y, ops, strict=True)]
    return _make_plan("oracle (exact budget)" if exact else "oracle", ops, ratios, required_bytes, hw)


@dataclass(frozen=True)
class KindSummary:
    """One op type across layers: its bytes, the share a plan offloads, and its time."""

    kind: str
    count: int
    bytes: float
    offloaded_bytes: float
    time_s: float
    bound: str

    @property
    def ratio(self) -> float:
        return self.offloaded_bytes / self.bytes if self.bytes > 0 else 0.0


def by_kind(ops: Sequence[Op], plan: Plan, hw: Hardware) -> list[KindSummary]:
    """Aggregate a plan per op type (qkv_proj, attention, ...) in first-seen order."""
    groups: dict[str, list[int]] = {}
    for i, op in enumerate(ops):
        groups.setdefault(op.kind, []).append(i)
    rows = []
    for kind, idx in groups.items():
        bounds = sorted({turning_points(ops[i], hw).bound for i in idx})
        rows.append(KindSummary(
            kind=kind, count=len(idx),
            bytes=math.fsum(ops[i].weight_bytes for i in idx),
            offloaded_bytes=math.fsum(plan.ratios[i] * ops[i].weight_bytes for i in idx),
            time_s=math.fsum(plan.op_times[i] for i in idx),
            bound="/".join(bounds)))
    return rows
