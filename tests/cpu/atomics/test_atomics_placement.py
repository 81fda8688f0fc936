"""The microbenchmark's CTA placement agrees with the tiling part's occupancy calculator: the shared
memory forcing_smem picks lets exactly the planned number of CTAs share an SM."""

import pytest

from smemkit.atomics.placement import cta_plan, forcing_smem
from smemkit.errors import InvalidArgumentError
from smemkit.tiling.occupancy import occupancy


@pytest.mark.parametrize("ctas", [1, 2, 3, 4])
def test_forcing_smem_fits_exactly_that_many_ctas(ctas):
    for needed in (0, 1, 1000, 4096, 20_000, 50_000, 57_000):
        try:
            size = forcing_smem(ctas, needed)
        except InvalidArgumentError:
            assert ctas * (needed + 1024) > 233_472  # only when they cannot fit
            continue
        assert size >= needed and size % 128 == 0
        assert occupancy("sm_90", 128, 0, size).limits["shared_memory"] == ctas


@pytest.mark.parametrize("warps", [*range(1, 33), *range(44, 65, 2)])
def test_cta_plan_puts_exactly_n_warps_on_an_sm(warps):
    ctas, per_cta = cta_plan(warps)
    occ = occupancy("sm_90", 32 * per_cta, 0, forcing_smem(1, 0) if ctas == 1 else 0)
    assert ctas * per_cta == warps and occ.blocks_per_sm >= ctas
    if ctas == 2:  # the warp limit alone keeps a third CTA out
        assert occ.limits["warps"] == 2
    else:  # shared memory keeps a second one out
        assert occ.blocks_per_sm == 1
