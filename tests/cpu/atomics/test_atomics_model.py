"""The queueing model and the verdict, against values computed by hand."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.atomics.model import (
    PerSM,
    closed_queue,
    error_summary,
    load_curve,
    md1_response,
    mixed_utilization,
    relative_error,
    utilization,
    verdict,
)
from smemkit.errors import InvalidArgumentError


def test_utilization_law_and_classes_add():
    assert utilization(0.25, 3.0) == pytest.approx(0.75)
    # 0.1 alu inst/cycle at 2 cycles + 0.05 cas inst/cycle at 4 cycles = 0.4
    assert mixed_utilization({"alu": 0.1, "cas": 0.05}, {"alu": 2.0, "cas": 4.0}) == pytest.approx(0.4)
    with pytest.raises(InvalidArgumentError, match="no service time"):
        mixed_utilization({"cas": 1.0}, {"alu": 1.0})
    with pytest.raises(InvalidArgumentError):
        utilization(-1.0, 1.0)


def test_one_warp_is_a_think_then_serve_cycle():
    q = closed_queue(lambda j: 4.0, 1, 12.0)
    assert q.throughput == pytest.approx(1 / 16)  # X = 1 / (Z + S)
    assert q.response == pytest.approx(4.0)  # no queueing with one customer
    assert q.utilization == pytest.approx(0.25)  # S / (Z + S)
    assert q.offered == pytest.approx(1 / 16)


def test_two_warps_constant_service_by_hand():
    # P(j) ~ Z^(2-j)/(2-j)! * S^j with Z = S = 1: 1/2, 1, 1 -> 0.2, 0.4, 0.4
    q = closed_queue(lambda j: 1.0, 2, 1.0)
    assert q.utilization == pytest.approx(0.8)
    assert q.throughput == pytest.approx(0.8)
    assert q.queue == pytest.approx(1.2)
    assert q.response == pytest.approx(1.5)


def test_two_warps_load_dependent_by_hand():
    # S(1) = 2, S(2) = 1 (the unit pipelines two), Z = 2: weights 2, 4, 2 -> P = 1/4, 1/2, 1/4
    q = closed_queue(lambda j: {1: 2.0, 2: 1.0}[j], 2, 2.0)
    assert q.throughput == pytest.approx(0.5 / 2 + 0.25 / 1)
    assert q.queue == pytest.approx(1.0)
    assert q.response == pytest.approx(2.0)
    assert q.utilization == pytest.approx(0.75)


def test_no_think_time_saturates_at_mu_n():
    s = {1: 8.0, 2: 5.0, 3: 4.0, 4: 3.5}
    q = closed_queue(lambda j: s[j], 4, 0.0)
    assert q.throughput == pytest.approx(1 / 3.5)
    assert q.queue == pytest.approx(4.0) and q.utilization == pytest.approx(1.0)
    assert q.response == pytest.approx(4 * 3.5)


def test_many_warps_are_stable():
    q = closed_queue(lambda j: 2.0 * (1 + 4 / j), 64, 3.0)
    assert 0 < q.throughput <= 1 / 2.0 * 1.0001
    assert math.isfinite(q.response)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.floats(0.0, 500.0),
       st.lists(st.floats(0.5, 50.0), min_size=64, max_size=64))
def test_cycle_time_law_and_bounds(n, think, s):
    q = closed_queue(lambda j: s[j - 1], n, think)
    assert q.throughput * (think + q.response) == pytest.approx(n, rel=1e-9)  # X (Z + R) = n
    assert q.throughput <= max(1 / x for x in s[:n]) * (1 + 1e-9)
    assert q.throughput <= n / (think + min(s[:n])) * (1 + 1e-9)
    assert 0 <= q.utilization <= 1 + 1e-12


def test_load_curve_rises_then_saturates():
    curve = load_curve(lambda j: 2.0, 16, [0, 4, 16, 64, 256, 1024])
    offered = [q.offered for q in curve]
    assert offered == sorted(offered)
    xs = [q.throughput for q in curve]
    assert xs == sorted(xs)
    assert xs[-1] == pytest.approx(0.5)  # Z = 0: the unit's rate 1/S
    assert [q.response for q in curve] == sorted(q.response for q in curve)


def test_closed_queue_rejects_bad_input():
    for args in ((lambda j: 1.0, 0, 1.0), (lambda j: 1.0, 2, -1.0), (lambda j: 0.0, 2, 1.0)):
        with pytest.raises(InvalidArgumentError):
            closed_queue(*args)


def test_md1():
    assert md1_response(0.5, 2.0) == pytest.approx(3.0)
    assert md1_response(0.0, 2.0) == pytest.approx(2.0)
    assert md1_response(1.0, 2.0) == math.inf


def test_verdict_atomic_bound():
    v = verdict(PerSM(0.75, 0.85, 0.9, "instances", 4), {"issue": 0.35, "dram": 0.2, "shared": 0.5})
    assert v.atomic_bound and v.bottleneck == "atomic"
    assert "median 0.85" in v.evidence[0]
    assert "shared-memory data pipe: 0.50 (includes the atomics' own traffic)" in v.evidence


def test_shared_pipe_busy_with_the_atomics_themselves_does_not_steal_the_verdict():
    v = verdict(PerSM(0.8, 0.82, 0.85, "instances", 4), {"issue": 0.3, "shared": 0.95, "lsu": 0.9})
    assert v.atomic_bound and v.bottleneck == "atomic"


def test_atomic_unit_below_80_percent_with_nothing_else_busy_is_latency_bound():
    """hist_inc on one bin from L2 on the H200: U 0.69, issue 0.62, and loading ahead sped it up."""
    v = verdict(PerSM(0.63, 0.69, 0.76, "rollups", 132), {"issue": 0.62, "l2": 0.31, "dram": 0.09})
    assert not v.atomic_bound and v.bottleneck == "none"
    assert "latency- or dependency-bound" in v.summary and "the atomic unit, 0.69" in v.summary


def test_verdict_other_unit():
    v = verdict(PerSM(0.5, 0.5, 0.5, "instances", 4), {"dram": 0.85, "issue": 0.3})
    assert not v.atomic_bound and v.bottleneck == "dram" and "DRAM is busiest" in v.summary


def test_verdict_atomic_high_but_another_unit_higher():
    v = verdict(PerSM(0.6, 0.65, 0.7, "instances", 4), {"issue": 0.9})
    assert not v.atomic_bound and v.bottleneck == "issue"


def test_verdict_nothing_saturated_and_imbalance():
    v = verdict(PerSM(0.31, 0.54, 0.87, "rollups", 4), {"dram": 0.1, "issue": None})
    assert not v.atomic_bound and v.bottleneck == "none"
    assert "latency" in v.summary and "busiest: the atomic unit" in v.summary
    assert any("load imbalance" in e for e in v.evidence)


def test_per_sm_of_values():
    p = PerSM.of([0.6, 0.8, float("nan"), 0.7])
    assert (p.min, p.median, p.max, p.sms) == (0.6, 0.7, 0.8, 3)
    with pytest.raises(InvalidArgumentError):
        PerSM.of([])


def test_errors():
    assert relative_error(1.1, 1.0) == pytest.approx(0.1)
    s = error_summary([(1.05, 1.0), (0.9, 1.0), (1.2, 1.0)])
    assert s["median"] == pytest.approx(0.1) and s["max"] == pytest.approx(0.2) and s["passes"]
    assert not error_summary([(1.3, 1.0)])["passes"]
    assert error_summary([])["count"] == 0
    with pytest.raises(InvalidArgumentError):
        relative_error(1.0, 0.0)


def test_serial_throughput():
    from smemkit.atomics.model import serial_throughput

    assert serial_throughput(2.0, 5.36) == pytest.approx(1 / 7.36)  # cas.int32.ret, 64 warps, think 4
    assert serial_throughput(1.0, 0.0) == 1.0
    with pytest.raises(InvalidArgumentError):
        serial_throughput(0.0, 1.0)
