"""Occupancy calculator against hand-computed cases (cuda_occupancy.h logic) and invariants."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError
from smemkit.tiling import ARCHS, occupancy


def test_sm90_256_threads_32_regs_no_smem_is_8_blocks():
    occ = occupancy("sm_90", 256, 32, 0)
    assert occ.blocks_per_sm == 8 and occ.occupancy == 1.0
    assert "warps" in occ.limiting and occ.limits["shared_memory"] == 228  # 1 KB reserved per block


def test_sm90_128_regs_is_register_limited():
    occ = occupancy("sm_90", 256, 128, 0)
    assert (occ.blocks_per_sm, occ.limiting, occ.occupancy) == (2, ("registers",), 0.25)


def test_sm90_100kb_is_smem_limited_to_2_blocks():
    occ = occupancy("sm_90", 256, 32, 100 * 1024)
    assert (occ.blocks_per_sm, occ.limiting) == (2, ("shared_memory",))
    assert occ.smem_per_block == 100 * 1024 + 1024
    assert any("cudaFuncSetAttribute" in n for n in occ.notes)


def test_register_rounding_to_256_per_warp_and_sub_partitions():
    # 33 regs -> 40 per thread -> 1280 per warp; 16384 // 1280 = 12 warps per sub-partition -> 48 warps
    occ = occupancy("sm_90", 256, 33, 0)
    assert occ.limits["registers"] == 6 and occ.regs_per_block == 1280 * 8
    # 96 threads = 3 warps: 4 sub-partitions * (16384 // 4096) = 16 warps -> 5 blocks, not 65536 // 12288 = 5
    assert occupancy("sm_90", 96, 128, 0).limits["registers"] == 5


def test_too_many_registers_for_one_block_cannot_launch():
    occ = occupancy("sm_90", 1024, 72, 0)
    assert occ.blocks_per_sm == 0 and "registers" in occ.limiting
    assert any("launch fails" in n for n in occ.notes)


@pytest.mark.parametrize("arch,warps,blocks", [("sm_80", 64, 32), ("sm_86", 48, 16), ("sm_89", 48, 24),
                                               ("sm_90", 64, 32)])
def test_block_and_warp_caps(arch, warps, blocks):
    small = occupancy(arch, 32, 16, 0)
    assert small.limits["blocks"] == blocks and small.max_warps == warps
    assert small.blocks_per_sm == min(blocks, warps)
    big = occupancy(arch, 1024, 16, 0)
    assert big.blocks_per_sm == warps // 32


def test_per_block_smem_opt_in_limits():
    assert occupancy("sm_80", 128, 32, 163 * 1024).blocks_per_sm == 1
    with pytest.raises(InvalidArgumentError, match=r"smem=.*0\.\.166912"):
        occupancy("sm_80", 128, 32, 164 * 1024)
    assert occupancy("sm_86", 128, 32, 99 * 1024).blocks_per_sm == 1
    with pytest.raises(InvalidArgumentError, match="smem="):
        occupancy("sm_89", 128, 32, 100 * 1024)
    assert occupancy("sm_90", 128, 32, 227 * 1024).blocks_per_sm == 1


def test_carveout_steps():
    occ = occupancy("sm_90", 128, 32, 48 * 1024, carveout_kb=100)
    assert occ.smem_per_sm == 100 * 1024 and occ.limits["shared_memory"] == 2
    raised = occupancy("sm_90", 128, 32, 20000, carveout_kb=8)
    assert raised.smem_per_sm == 32 * 1024 and raised.notes
    with pytest.raises(InvalidArgumentError, match="carveout_kb"):
        occupancy("sm_86", 128, 32, 0, carveout_kb=132)


def test_cluster_estimate_and_errors():
    occ = occupancy("sm_90", 256, 32, 0, cluster=2)
    assert occ.max_active_clusters == 132 * 8 // 2
    odd = occupancy("sm_90", 256, 32, 100 * 1024, cluster=3)  # 2 blocks/SM: GPC 18 -> 12, 16 -> 10
    assert odd.max_active_clusters == 2 * 12 + 5 * 10 + 5  # GPC of 8 -> 5; GPCs of 2 < P hold none
    # cudaOccupancyMaxActiveClusters on the H200 (benchmarks/results/h200/tiling.json)
    one_per_sm = [occupancy("sm_90", 192, 36, 150 * 1024, cluster=p, non_portable_cluster=p > 8)
                  for p in (1, 2, 4, 8, 16)]
    assert [o.max_active_clusters for o in one_per_sm] == [132, 66, 30, 15, 7]
    small = occupancy("sm_90", 64, 28, 0, cluster=1)  # 32 blocks/SM alone, 8 in a cluster launch
    assert (small.blocks_per_sm, small.max_active_clusters) == (32, 132 * 8)
    four = occupancy("sm_90", 256, 64, 48 * 1024, cluster=16, non_portable_cluster=True)
    assert (four.blocks_per_sm, four.max_active_clusters) == (4, 28)
    with pytest.raises(InvalidArgumentError, match="no thread-block clusters"):
        occupancy("sm_80", 256, 32, 0, cluster=2)
    with pytest.raises(InvalidArgumentError, match="non-portable"):
        occupancy("sm_90", 256, 32, 0, cluster=16)
    big = occupancy("sm_90", 256, 32, 0, cluster=16, non_portable_cluster=True)
    assert big.max_active_clusters == 2 * 9 + 5 * 8  # 8 blocks/SM; GPCs under 16 SMs hold none


@pytest.mark.parametrize("kwargs,match", [
    ({"arch": "sm_70"}, "arch="), ({"threads": 0}, "threads="), ({"threads": 1025}, "threads="),
    ({"regs": 256}, "regs="), ({"smem": -1}, "smem="),
])
def test_invalid_arguments_name_themselves(kwargs, match):
    args = {"arch": "sm_90", "threads": 128, "regs": 32, "smem": 0, **kwargs}
    with pytest.raises(InvalidArgumentError, match=match):
        occupancy(**args)


def test_arch_spellings():
    assert occupancy("90", 128, 32).arch == occupancy("sm90", 128, 32).arch == "sm_90"
    assert occupancy("8.9", 128, 32).arch == "sm_89"


@given(st.sampled_from(sorted(ARCHS)), st.integers(1, 1024), st.integers(0, 255), st.integers(0, 99 * 1024),
       st.integers(0, 64), st.integers(0, 8192))
def test_monotone_in_resources_and_bounded(arch, threads, regs, smem, dregs, dsmem):
    occ = occupancy(arch, threads, regs, smem)
    assert occ.active_warps <= occ.max_warps and occ.blocks_per_sm <= ARCHS[arch].max_blocks_per_sm
    more = occupancy(arch, threads, min(255, regs + dregs), min(99 * 1024, smem + dsmem))
    assert more.blocks_per_sm <= occ.blocks_per_sm
