"""The per-op cost model t(x) = max(C/F, (1-x)W/B_g, xW/B_h) and its turning points."""

import math

import pytest
from hypothesis import given, settings
from offload_strategies import instances

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import select_profile
from smemkit.offload import Hardware, Op, hardware_from_profile, op_time, turning_points

HW = Hardware(hbm_bytes_per_s=4e12, host_bytes_per_s=50e9, flops_per_s=800e12)


def test_op_time_is_the_slowest_of_three():
    op = Op("a", "a", 1e9, 0.0)
    assert op_time(op, 0.0, HW) == pytest.approx(1e9 / 4e12)
    assert op_time(op, 1.0, HW) == pytest.approx(1e9 / 50e9)
    op = Op("b", "b", 1e9, 1e15)  # 1.25 s of compute hides both reads
    assert op_time(op, 0.5, HW) == pytest.approx(1e15 / 800e12)


def test_memory_bound_op_peaks_at_balanced_ratio():
    op = Op("gemv", "linear", 1e9, 2e9)
    tp = turning_points(op, HW)
    assert tp.bound == "memory" and tp.lo == tp.hi == pytest.approx(50e9 / (50e9 + 4e12))
    assert op_time(op, tp.lo, HW) == pytest.approx(1e9 / (4e12 + 50e9))


def test_compute_bound_op_has_a_plateau_from_zero():
    op = Op("gemm", "linear", 1e8, 1e8 * 1e4)  # intensity 10^4 > F/B_g = 200
    tp = turning_points(op, HW)
    assert tp.bound == "compute" and tp.lo == 0.0
    assert tp.hi == pytest.approx((1e12 / 800e12) / (1e8 / 50e9))
    assert op_time(op, tp.hi, HW) == pytest.approx(op_time(op, 0.0, HW))


def test_mixed_op_plateau_starts_after_zero_and_contains_balanced_ratio():
    # intensity 198 FLOP/B: HBM-bound at x = 0 (F/B_g = 200) yet C/F > W/(B_g+B_h) (ridge 197.5)
    op = Op("mid", "linear", 1e9, 1e9 * 198.0)
    tp = turning_points(op, HW)
    assert tp.bound == "mixed" and 0.0 < tp.lo < HW.balanced_ratio < tp.hi


@settings(max_examples=200, deadline=None)
@given(instances(max_ops=4))
def test_curve_falls_then_is_flat_then_rises(case):
    ops, hw, _ = case
    for op in ops:
        tp = turning_points(op, hw)
        best = op_time(op, tp.lo, hw)
        assert op_time(op, tp.hi, hw) == pytest.approx(best, rel=1e-9)
        for x in (0.0, 0.25, 0.5, 0.75, 1.0, tp.lo / 2, (tp.lo + tp.hi) / 2, (1 + tp.hi) / 2):
            assert op_time(op, x, hw) >= best * (1 - 1e-12)
            if tp.lo <= x <= tp.hi:
                assert op_time(op, x, hw) == pytest.approx(best, rel=1e-9)


def test_profile_defaults_and_overrides():
    h200, _ = select_profile("h200")
    hw = hardware_from_profile(h200)
    assert hw.flops_per_s == 790e12 and "measured" in hw.sources["F"]
    assert hw.host_bytes_per_s == pytest.approx(h200.host_copy_gbps * 1e9)
    h100 = hardware_from_profile(select_profile("h100")[0])
    assert h100.flops_per_s == pytest.approx(989.4e12)
    assert h100.host_bytes_per_s == 51.2e9 and "assumed" in h100.sources["B_h"]
    hw = hardware_from_profile(h200, tflops=500, host_gbps=25, hbm_tbps=3)
    assert (hw.flops_per_s, hw.host_bytes_per_s, hw.hbm_bytes_per_s) == (500e12, 25e9, 3e12)


@pytest.mark.parametrize("kw,word", [({"tflops": 0}, "--tflops"), ({"host_gbps": -1}, "--host-gbps"),
                                     ({"hbm_tbps": math.nan}, "--hbm-tbps")])
def test_bad_overrides_name_the_flag(kw, word):
    with pytest.raises(InvalidArgumentError, match=word):
        hardware_from_profile(select_profile("h200")[0], **kw)


def test_unknown_profile_needs_tflops():
    import dataclasses

    odd = dataclasses.replace(select_profile("h200")[0], name="mystery", gpu="Mystery GPU")
    with pytest.raises(InvalidArgumentError, match="--tflops"):
        hardware_from_profile(odd)
    assert hardware_from_profile(odd, tflops=100).flops_per_s == 100e12


def test_ops_and_hardware_reject_bad_numbers():
    with pytest.raises(InvalidArgumentError, match="weight_bytes"):
        Op("x", "x", -1.0, 0.0)
    with pytest.raises(InvalidArgumentError, match="flops"):
        Op("x", "x", 1.0, math.inf)
    with pytest.raises(InvalidArgumentError, match="host_bytes_per_s"):
        Hardware(1e12, 0.0, 1e12)
