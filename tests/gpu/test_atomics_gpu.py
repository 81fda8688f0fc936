"""GPU smoke tests for the atomics launchers (skipped without a GPU; run them first on the H200).

They check that the launches work and give sane numbers, not the model: one sweep point, the
think-time run, and the histogram kernels against torch.bincount.
"""

import pytest
import torch

from smemkit.atomics.kernels import HIST_KERNELS, PATTERNS, AtomSweep, Histogram, Variant

pytestmark = pytest.mark.gpu


def sm_count() -> int:
    return torch.cuda.get_device_properties(0).multi_processor_count


@pytest.mark.parametrize("n", [1, 8, 64])
def test_sweep_point_runs_on_every_sm(n):
    sweep = AtomSweep(Variant.parse("add.int32.noret"), sm_count())
    r = sweep.run(PATTERNS["distinct_banks"], n)
    assert r["sms"] >= 0.9 * sm_count(), r  # nearly every SM ran exactly n warps at once
    assert 0 < r["per_cycle_median"] <= 4, r  # warp instructions per SM cycle


def test_conflicts_cost_more_than_none():
    sweep = AtomSweep(Variant.parse("add.int32.noret"), sm_count())
    free = sweep.run(PATTERNS["distinct_banks"], 32)["per_cycle_median"]
    worst = sweep.run(PATTERNS["one_bank"], 32)["per_cycle_median"]
    assert worst < free


def test_think_only_run():
    sweep = AtomSweep(Variant.parse("inc.int32.noret"), sm_count())
    r = sweep.run(PATTERNS["distinct_banks"], 8, iters=256, think=16, do_atomic=False)
    assert r["per_cycle_median"] > 0


@pytest.mark.parametrize("name", HIST_KERNELS)
def test_histograms_match_bincount(name):
    keys = torch.randint(0, 2**31 - 1, (1 << 20,), device="cuda", dtype=torch.int64).to(torch.int32)
    keys[:1000] = 7  # a hot bin
    out = torch.zeros(256, dtype=torch.int32, device="cuda")
    Histogram().launcher(name, keys, out, 256, sm_count=sm_count())()
    want = torch.bincount(keys.to(torch.int64) & 255, minlength=256)
    assert torch.equal(out.to(torch.int64), want)
