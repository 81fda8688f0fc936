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


def _bench():
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "atomics.py"
    spec = importlib.util.spec_from_file_location("atomics_bench_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("name", HIST_KERNELS)
@pytest.mark.parametrize("kind", ["uniform", "skewed", "single"])
@pytest.mark.parametrize(("key_bytes", "nbins", "passes", "n"), [
    (4, 256, 1, (1 << 20) + 13),  # 32-bit keys; an odd count exercises the one-key tail
    (1, 256, 1, (1 << 20) + 13),  # 8-bit keys, 16 per uint4, tail of 13
    (1, 64, 3, 1 << 20),  # the L2 regimes' shape: 64 bins, several passes per launch
])
def test_histograms_exact_on_the_case_study_inputs(name, kind, key_bytes, nbins, passes, n):
    """Every kernel, hist_lane included, equals torch.bincount exactly (times the passes) on the
    benchmark's own uniform / skewed / single-bin keys, for both key widths."""
    bench = _bench()
    keys = bench.make_keys(kind, n, "cuda", nbins=nbins, key_bytes=key_bytes)
    out = torch.zeros(nbins, dtype=torch.int32, device="cuda")
    Histogram().launcher(name, keys, out, nbins, sm_count=sm_count(), passes=passes)()
    want = torch.bincount(keys.to(torch.int64) & (nbins - 1), minlength=nbins)
    assert torch.equal(out.to(torch.int64), passes * want)


def test_lane_histogram_with_wide_bins_on_uint8_keys():
    """512 bins on 8-bit keys: only bins 0..255 can be hit, and no key picks up its neighbour's bits."""
    keys = torch.randint(0, 256, (1 << 20,), device="cuda", dtype=torch.int64).to(torch.uint8)
    for name in ("hist_lane", "hist_inc"):
        out = torch.zeros(512, dtype=torch.int32, device="cuda")
        Histogram().launcher(name, keys, out, 512, sm_count=sm_count())()
        want = torch.bincount(keys.to(torch.int64), minlength=512)
        assert torch.equal(out.to(torch.int64), want), name
