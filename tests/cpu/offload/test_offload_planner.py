"""Planners: DAK's greedy against an exact water-filling oracle, an LP, and a brute force."""

import math

import pytest
from hypothesis import given, settings
from offload_strategies import instances

from smemkit.errors import InvalidArgumentError
from smemkit.offload import (
    Hardware,
    Op,
    greedy_plan,
    op_time,
    oracle_plan,
    required_offload_bytes,
    total_bytes,
    turning_points,
    uniform_plan,
)

REL = 1e-6


def close(a: float, b: float, rel: float = REL) -> bool:
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def assert_feasible(plan, ops, required, exact):
    assert all(0.0 <= x <= 1.0 for x in plan.ratios)
    held = total_bytes(ops)
    assert plan.offloaded_bytes >= required - 1e-9 * held
    if exact:
        assert plan.offloaded_bytes <= required + 1e-9 * held


@pytest.mark.parametrize("exact", [False, True])
@settings(max_examples=400, deadline=None)
@given(case=instances(read_fractions=True))
def test_greedy_matches_oracle_and_beats_uniform(case, exact):
    ops, hw, required = case
    greedy = greedy_plan(ops, hw, required, exact=exact)
    oracle = oracle_plan(ops, hw, required, exact=exact)
    uniform = uniform_plan(ops, hw, required)
    for plan in (greedy, oracle, uniform):
        assert_feasible(plan, ops, required, exact or plan is uniform)
    assert close(greedy.time_s, oracle.time_s), (greedy.time_s, oracle.time_s)
    assert greedy.time_s <= uniform.time_s * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(case=instances())
def test_offloading_more_than_required_never_hurts(case):
    ops, hw, required = case
    assert greedy_plan(ops, hw, required).time_s <= greedy_plan(ops, hw, required, exact=True).time_s * (
        1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(case=instances())
def test_equality_version_differs_exactly_by_unused_phase_one_bytes(case):
    """DAK's equality constraint versus ">=": below the phase-1 capacity the gap is (cap1 - R)/B_g."""
    ops, hw, required = case
    cap1 = math.fsum(turning_points(op, hw).lo * op.weight_bytes for op in ops)
    gap = greedy_plan(ops, hw, required, exact=True).time_s - greedy_plan(ops, hw, required).time_s
    want = max(0.0, cap1 - required) / hw.hbm_bytes_per_s
    total = greedy_plan(ops, hw, required, exact=True).time_s
    assert abs(gap - want) <= 1e-9 * total


@settings(max_examples=200, deadline=None)
@given(case=instances())
def test_uniform_is_optimal_once_every_op_is_past_its_last_turning_point(case):
    """DAK Fig. 11: above every op's threshold each byte costs 1/B_h anywhere, so uniform ties."""
    ops, hw, _ = case
    worst = max(turning_points(op, hw).hi for op in ops)
    required = worst * total_bytes(ops)
    assert close(uniform_plan(ops, hw, required).time_s, oracle_plan(ops, hw, required).time_s)


def _two_op_bruteforce(a: Op, b: Op, hw: Hardware, required: float) -> float:
    """Exact optimum of the equality problem for two ops: the objective is piecewise linear in x_a
    with kinks only where either op's terms cross, so the minimum lies on one of those points."""
    lo = max(0.0, (required - b.weight_bytes) / a.weight_bytes)
    hi = min(1.0, required / a.weight_bytes)

    def kinks(op):
        tc, tg, th = op.flops / hw.flops_per_s, op.weight_bytes / hw.hbm_bytes_per_s, \
            op.weight_bytes / hw.host_bytes_per_s
        return [k for k in (0.0, 1.0, 1 - tc / tg, tc / th, tg / (tg + th)) if 0 <= k <= 1]

    cands = {lo, hi, *kinks(a)}
    cands.update((required - k * b.weight_bytes) / a.weight_bytes for k in kinks(b))
    best = math.inf
    for xa in cands:
        if lo <= xa <= hi:
            xb = min(1.0, max(0.0, (required - xa * a.weight_bytes) / b.weight_bytes))
            best = min(best, op_time(a, xa, hw) + op_time(b, xb, hw))
    return best


@settings(max_examples=400, deadline=None)
@given(case=instances(max_ops=2))
def test_two_ops_greedy_matches_bruteforce(case):
    ops, hw, required = case
    if len(ops) != 2:
        ops = [*ops, Op("pad", "pad", 1e6, 0.0)]
    greedy = greedy_plan(ops, hw, required, exact=True)
    assert close(greedy.time_s, _two_op_bruteforce(ops[0], ops[1], hw, required))


@pytest.mark.parametrize("exact", [False, True])
@settings(max_examples=150, deadline=None)
@given(case=instances(max_ops=6, read_fractions=True))
def test_greedy_matches_linear_program(case, exact):
    """min sum s_i  s.t.  s_i >= C_i/F, s_i >= (1-x_i)f_i W_i/B_g, s_i >= x_i f_i W_i/B_h,
    sum x_i W_i >= R (f_i the read fraction: bytes stored and bytes read differ for experts)."""
    np = pytest.importorskip("numpy")
    optimize = pytest.importorskip("scipy.optimize")
    ops, hw, required = case
    n, held = len(ops), total_bytes(ops)
    scale = max(max(op.flops / hw.flops_per_s, op.read_bytes / hw.host_bytes_per_s,
                    op.read_bytes / hw.hbm_bytes_per_s) for op in ops)
    rows, rhs = [], []
    for i, op in enumerate(ops):
        g, h = op.read_bytes / hw.hbm_bytes_per_s / scale, op.read_bytes / hw.host_bytes_per_s / scale
        r1 = np.zeros(2 * n)
        r1[i], r1[n + i] = -g, -1.0
        rows.append(r1)
        rhs.append(-g)
        r2 = np.zeros(2 * n)
        r2[i], r2[n + i] = h, -1.0
        rows.append(r2)
        rhs.append(0.0)
    share = np.concatenate([[op.weight_bytes / held for op in ops], np.zeros(n)])
    cover = dict(A_eq=[share], b_eq=[required / held]) if exact else {}
    if not exact:
        rows.append(-share)
        rhs.append(-required / held)
    bounds = [(0.0, 1.0)] * n + [(op.flops / hw.flops_per_s / scale, None) for op in ops]
    res = optimize.linprog(np.concatenate([np.zeros(n), np.ones(n)]), A_ub=np.array(rows), b_ub=rhs,
                           bounds=bounds, method="highs", **cover)
    assert res.status == 0, res.message
    greedy = greedy_plan(ops, hw, required, exact=exact).time_s
    assert abs(greedy - res.fun * scale) <= 1e-6 * greedy + 1e-7 * scale


def test_greedy_beats_uniform_on_a_mix_of_compute_and_memory_bound_ops():
    hw = Hardware(hbm_bytes_per_s=4e12, host_bytes_per_s=50e9, flops_per_s=800e12)
    gemm = Op("gemm", "linear", 1e9, 1e9 * 5000)   # compute-bound; plateau to x = 0.3125
    attn = Op("attn", "attention", 1e9, 1e9)       # memory-bound
    required = 0.3e9
    greedy, uniform = greedy_plan([gemm, attn], hw, required), uniform_plan([gemm, attn], hw, required)
    assert greedy.ratios[0] == pytest.approx(0.3 - hw.balanced_ratio, rel=1e-9)
    assert greedy.ratios[1] == pytest.approx(hw.balanced_ratio)
    assert uniform.time_s / greedy.time_s > 1.3


def naive_greedy(ops, hw, required):
    """The paper's phases with a literal classification: an op is memory-bound iff C/F < W/B_g at
    x = 0 and then turns at B_h/(B_h+B_g); compute-bound ops turn at C B_h/(F W)."""
    r = hw.balanced_ratio
    x = [0.0] * len(ops)
    memory = [op.flops / hw.flops_per_s < op.weight_bytes / hw.hbm_bytes_per_s for op in ops]
    for i in range(len(ops)):
        if memory[i]:
            x[i] = r
    need = required - sum(xi * op.weight_bytes for xi, op in zip(x, ops, strict=True))
    caps = [0.0 if memory[i] else min(1.0, op.flops / hw.flops_per_s * hw.host_bytes_per_s /
                                      op.weight_bytes) * op.weight_bytes for i, op in enumerate(ops)]
    for caps_now in (caps, None):
        if caps_now is None:
            caps_now = [(1 - xi) * op.weight_bytes for xi, op in zip(x, ops, strict=True)]
        room = sum(caps_now)
        share = min(1.0, max(0.0, need) / room) if room else 0.0
        for i, op in enumerate(ops):
            x[i] += share * caps_now[i] / op.weight_bytes
        need -= share * room
    return sum(op_time(op, xi, hw) for op, xi in zip(ops, x, strict=True))


def test_literal_classification_loses_on_mixed_ops():
    """Counterexample class: an op HBM-bound at x = 0 with W/(B_g+B_h) < C/F < W/B_g has a flat
    optimum on [1 - C B_g/(F W), C B_h/(F W)]. Treating B_h/(B_h+B_g) as its turning point skips
    the free bytes above it. Only visible with a fast host link (the gap is below B_h/B_g)."""
    hw = Hardware(hbm_bytes_per_s=4e12, host_bytes_per_s=1e12, flops_per_s=800e12)  # C2C-like
    mixed = Op("mixed", "linear", 1e9, 2.4e-4 * 800e12)  # plateau [0.04, 0.24], peak ratio 0.2
    memory = Op("memory", "attention", 1e9, 0.0)
    ops, required = [mixed, memory], 0.44e9
    assert turning_points(mixed, hw).bound == "mixed"
    best = greedy_plan(ops, hw, required)
    assert best.time_s == pytest.approx(2.4e-4 + 2e-4)
    assert oracle_plan(ops, hw, required).time_s == pytest.approx(best.time_s)
    assert naive_greedy(ops, hw, required) == pytest.approx(best.time_s + 0.02e9 / 1e12)


def test_infeasible_required_offload_is_a_clear_error():
    ops = [Op("a", "a", 1e9, 0.0)]
    hw = Hardware(4e12, 50e9, 800e12)
    for planner in (greedy_plan, oracle_plan, uniform_plan):
        with pytest.raises(InvalidArgumentError, match="infeasible.*at most the total"):
            planner(ops, hw, 2e9)
        with pytest.raises(InvalidArgumentError, match=">= 0"):
            planner(ops, hw, -1.0)
    with pytest.raises(InvalidArgumentError, match="--gpu-mem"):
        required_offload_bytes(ops, -1.0)
    with pytest.raises(InvalidArgumentError, match="no operations"):
        greedy_plan([], hw, 0.0)


def test_required_offload_from_budget():
    ops = [Op("a", "a", 3e9, 0.0), Op("b", "b", 1e9, 0.0)]
    assert required_offload_bytes(ops, 1e9) == 3e9
    assert required_offload_bytes(ops, 10e9) == 0.0


def test_zero_byte_ops_are_left_alone():
    hw = Hardware(4e12, 50e9, 800e12)
    ops = [Op("empty", "e", 0.0, 1e9), Op("a", "a", 1e9, 0.0)]
    for plan in (greedy_plan(ops, hw, 0.5e9), oracle_plan(ops, hw, 0.5e9)):
        assert plan.ratios[0] == 0.0 and plan.ratios[1] == pytest.approx(0.5)


def test_host_bound_bytes_go_to_the_experts_first():
    """Past every turning point a stored byte of experts costs f/B_h, a dense byte 1/B_h: the
    greedy fills the experts' host room before it moves another dense byte."""
    hw = Hardware(hbm_bytes_per_s=4e12, host_bytes_per_s=50e9, flops_per_s=800e12)
    dense = Op("dense", "linear", 1e9, 1e6)
    experts = Op("experts", "experts", 4e9, 1e6, read_fraction=0.5)
    lo = hw.balanced_ratio
    required = lo * 5e9 + 0.5 * (1 - lo) * 4e9  # past phase 1, less than the experts' remaining room
    plan = greedy_plan([dense, experts], hw, required)
    assert math.isclose(plan.ratios[0], lo, rel_tol=1e-9)
    assert plan.ratios[1] > lo
    assert plan.time_s == pytest.approx(oracle_plan([dense, experts], hw, required).time_s, rel=1e-9)
    assert plan.time_s < uniform_plan([dense, experts], hw, required).time_s


def test_read_fraction_is_checked():
    for bad in (0.0, -0.5, 1.5, math.nan):
        with pytest.raises(InvalidArgumentError, match="read_fraction"):
            Op("e", "experts", 1.0, 1.0, read_fraction=bad)
