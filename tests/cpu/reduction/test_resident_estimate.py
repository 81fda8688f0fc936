"""The cost model's resident-cluster estimate is the tiling part's occupancy calculator, and it is an
upper bound of what the driver reported for the H200 calibration (registers, which it cannot know
before compiling, are the only limit it leaves out)."""

import dataclasses

import pytest

from smemkit.hw.profile import builtin_profiles
from smemkit.reduction.cost_model import resident_estimate
from smemkit.reduction.tables import h200_smemkit
from smemkit.tiling.occupancy import ARCHS, device_limits, occupancy, resident_clusters

H200 = builtin_profiles()["h200_sxm"]


def _limits(profile):
    return device_limits(profile.compute_capability, sm_count=profile.sm_count,
                         smem_per_sm=profile.smem_per_sm_bytes, smem_per_block=profile.smem_per_block_bytes,
                         max_cluster=profile.max_cluster_size)


def test_estimate_is_the_occupancy_calculators_cluster_count():
    for point in h200_smemkit():
        for P in (2, 4, 8, 16):
            need = point.shape.smem_per_cta(P)
            if need > H200.smem_per_block_bytes:
                assert resident_estimate(point.shape, P, H200) == 1  # cannot launch: evaluate says so
                continue
            want = occupancy("sm_90", 256, 0, need, cluster=P, non_portable_cluster=P > 8).max_active_clusters
            assert resident_estimate(point.shape, P, H200) == want


def test_estimate_never_below_the_drivers_answer():
    """benchmarks/results/h200/credit_eval.json recorded cudaOccupancyMaxActiveClusters for every
    measured (workload, shape, P): the estimate (no register limit) is never below it, and equal
    at the points where shared memory and threads are what limits the kernel."""
    points = [(pt, P, n) for pt in h200_smemkit() for P, n in pt.measured.resident_clusters.items()]
    assert len(points) > 100
    equal = 0
    for pt, P, driver in points:
        estimate = resident_estimate(pt.shape, P, H200)
        assert estimate >= driver, (pt.workload, pt.shape.M, pt.shape.N, P, estimate, driver)
        equal += estimate == driver
    assert equal >= 40  # 42 of 115 when written: the GPC packing is what the even spread missed


def test_device_limits():
    assert device_limits((9, 0), sm_count=132, smem_per_sm=233472, smem_per_block=232448,
                         max_cluster=16) is ARCHS["sm_90"]
    # another SM count: the H200's GPC partition does not apply; clusters spread evenly
    other = device_limits((9, 0), sm_count=114, smem_per_sm=233472, smem_per_block=232448, max_cluster=16)
    assert other.gpc_sms == () and other.max_warps_per_sm == ARCHS["sm_90"].max_warps_per_sm
    assert resident_clusters(other, 114, 256, 0, 50_000, 4) == 114  # 233472 // 51072 = 4 CTAs per SM
    # an architecture the calculator has no table for: generic limits from the profile
    rtx = builtin_profiles()["rtx5090"]
    generic = _limits(rtx)
    assert generic.name == "sm_120" and generic.smem_per_sm == rtx.smem_per_sm_bytes
    assert generic.smem_per_block_optin == rtx.smem_per_block_bytes and generic.gpc_sms == ()
    # 102400 // round_up(33056 + 1024, 128) = 2 CTAs per SM, 170 SMs, clusters of 2
    assert resident_clusters(generic, 170, 256, 0, 33056, 2) == 170


@pytest.mark.parametrize("P", [2, 4, 8, 16])
def test_even_spread_is_an_upper_bound_of_the_gpc_packing(P):
    lim = ARCHS["sm_90"]
    flat = dataclasses.replace(lim, gpc_sms=())
    for smem in (0, 20_000, 50_000, 100_000, 200_000):
        packed = resident_clusters(lim, 132, 256, 0, smem, P)
        assert packed <= resident_clusters(flat, 132, 256, 0, smem, P)
