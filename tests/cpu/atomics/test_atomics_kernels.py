"""The microbenchmark and histogram kernels: every variant compiles for sm_90a without spills; the
pure-Python parts of the launcher (patterns, wavefronts, layouts, clock -> throughput)."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from smemkit.atomics import kernels as K
from smemkit.errors import InvalidArgumentError

ATOM_KERNELS = {p.kernel for p in K.PATTERNS.values()}


def test_every_variant_compiles_for_sm90a_without_spills():
    variants = K.all_variants()
    assert len(variants) == 2 * sum(len(d) for d in K.SUPPORTED.values())
    with ThreadPoolExecutor(max_workers=2) as pool:
        modules = list(pool.map(lambda v: (v, v.compile("sm_90a")), variants))
    for v, m in modules:
        assert set(m.resources) == ATOM_KERNELS, v.name
        for name, usage in m.resources.items():
            assert not usage.spills and usage.stack_bytes == 0, f"{v.name}:{name} {usage}"
            # __launch_bounds__(512, 4): 64 warps per SM need <= 32 registers per thread
            assert usage.registers <= 32, f"{v.name}:{name} uses {usage.registers} registers"


def test_histogram_kernels_compile_without_spills():
    m = K.compile_histograms("sm_90a")
    assert "hist_lane" in K.HIST_KERNELS and len(K.HIST_ENTRIES) == 2 * len(K.HIST_KERNELS)
    assert set(K.HIST_ENTRIES) <= set(m.resources)
    for k in K.HIST_ENTRIES:
        usage = m.resources[k]
        assert not usage.spills and usage.stack_bytes == 0, f"{k} {usage}"
        # __launch_bounds__(1024): 64 warps per SM leave 32 registers per thread
        assert usage.registers <= 32, f"{k} uses {usage.registers} registers"


def test_histogram_entries_and_shared_memory():
    assert K.hist_entry("hist_lane", 4) == "hist_lane"
    assert K.hist_entry("hist_lane", 1) == "hist_lane_u8"
    with pytest.raises(InvalidArgumentError, match="4 or 1 bytes"):
        K.hist_entry("hist_inc", 2)
    with pytest.raises(InvalidArgumentError, match="unknown histogram kernel"):
        K.hist_entry("hist_other", 4)
    # one copy; one per warp; one per lane (bin b of lane l at word 32 b + l: 32 KB for 256 bins)
    assert K.Histogram.smem_bytes("hist_inc", 256, 512) == 1024
    assert K.Histogram.smem_bytes("hist_private_u8", 256, 512) == 16 * 1024
    assert K.Histogram.smem_bytes("hist_lane", 256, 512) == 32 * 1024
    assert K.Histogram.smem_bytes("hist_lane_u8", 64, 512) == 8 * 1024
    assert K.HIST_PARAMS[-1] == "i32"  # passes


def test_variant_names_and_errors():
    v = K.Variant.parse("inc.int32.noret")
    assert (v.op, v.dtype, v.returning, v.name) == ("inc", "int32", False, "inc.int32.noret")
    assert v.defines() == {"ATOM_OP": 1, "ATOM_DTYPE": 0, "ATOM_RET": 0, "ATOM_ONLY": 1}
    with pytest.raises(InvalidArgumentError, match="does not exist for float32"):
        K.Variant("max", "float32", False)
    with pytest.raises(InvalidArgumentError, match="unknown atomic op"):
        K.Variant("xor", "int32", False)
    with pytest.raises(InvalidArgumentError, match="OP.DTYPE"):
        K.Variant.parse("add.int32")


@pytest.mark.parametrize(("pattern", "dtype", "addresses", "wavefronts"), [
    ("same", "int32", 1, 1),
    ("distinct_banks", "int32", 32, 1),
    ("distinct_banks", "int64", 32, 2),  # 64 words over 32 banks
    ("one_bank", "int32", 32, 32),
    ("one_bank", "float64", 32, 32),
    ("mix4", "int32", 4, 1),
    ("conflict4", "int32", 32, 4),
    ("conflict16", "uint32", 32, 16),
])
def test_patterns_addresses_and_bank_rule_wavefronts(pattern, dtype, addresses, wavefronts):
    p = K.PATTERNS[pattern]
    assert p.distinct_addresses() == addresses
    assert K.nominal_wavefronts(p, dtype) == wavefronts


def test_conflict_pattern_puts_k_lanes_in_each_bank():
    lanes = K.PATTERNS["conflict8"].lane_elements(4)
    banks = [e % 32 for e in lanes]
    assert len(set(lanes)) == 32 and all(banks.count(b) == 8 for b in set(banks))


@pytest.mark.parametrize(("n", "plan"), [(1, (1, 1)), (3, (1, 3)), (16, (1, 16)), (20, (1, 20)),
                                         (32, (1, 32)), (44, (2, 22)), (48, (2, 24)), (56, (2, 28)),
                                         (64, (2, 32))])
def test_cta_plan(n, plan):
    ctas, per_cta = K.cta_plan(n)
    assert (ctas, per_cta) == plan
    if ctas > 1:  # the 64-warp limit alone keeps a third CTA off the SM
        assert (ctas + 1) * per_cta > K.WARPS_PER_SM_MAX


def test_cta_plan_rejects_what_cannot_be_placed_exactly():
    for n in (0, 33, 40, 43, 45, 65):
        with pytest.raises(InvalidArgumentError, match="1..32 or an even 44..64"):
            K.cta_plan(n)


@given(st.integers(1, 4), st.integers(0, 40_000))
def test_forcing_smem_admits_exactly_that_many_ctas(ctas, needed):
    s = K.forcing_smem(ctas, needed)
    per = s + K.SMEM_RESERVED_PER_CTA
    assert s >= needed and s % 128 == 0
    assert ctas * per <= K.SMEM_PER_SM < (ctas + 1) * per


def test_layouts():
    one_bank = K.PATTERNS["one_bank"]
    private = K.layout(one_bank, "int32", 1, 16, "private")
    assert (private.kind, private.warp_stride) == ("private", 1024)  # 4 KiB apart: bank-aligned
    shifted = K.layout(one_bank, "int32", 2, 32, "private")  # 2 x 128 KiB would not fit
    assert (shifted.kind, shifted.warp_stride) == ("bank_shifted", 1)
    shared = K.layout(K.PATTERNS["distinct_banks"], "int32", 2, 16, "shared")
    assert (shared.kind, shared.warp_stride) == ("shared", 0)
    with pytest.raises(InvalidArgumentError, match="scope"):
        K.layout(one_bank, "int32", 1, 1, "global")


def test_per_sm_throughput_from_clock_readings():
    # 3 CTAs of 2 warps: CTAs 0 and 2 on SM 5, CTA 1 on SM 9; 100 iterations per warp
    timing = np.array([[1000, 1400], [1010, 1390],   # CTA 0
                       [50, 250], [60, 260],          # CTA 1
                       [1100, 1800], [1000, 1700]])   # CTA 2
    rows = {r.sm: r for r in K.per_sm_throughput(timing.ravel(), np.array([5, 9, 5]), 2, 100)}
    assert (rows[5].warps, rows[5].cycles, rows[5].instructions) == (4, 800, 400)
    assert rows[5].per_cycle == pytest.approx(0.5)
    assert (rows[9].warps, rows[9].cycles) == (2, 210)
    assert rows[5].start_spread == pytest.approx((1100 - 1000) / 800)
    summary = K.summarize_sms(list(rows.values()), 4, max_spread=0.2)
    assert summary["sms"] == 1 and summary["sms_other"] == 1
    assert summary["per_cycle_median"] == pytest.approx(0.5)
    with pytest.raises(InvalidArgumentError, match="exactly 3 warps"):
        K.summarize_sms(list(rows.values()), 3, max_spread=1.0)
    with pytest.raises(InvalidArgumentError, match="started together"):
        K.summarize_sms(list(rows.values()), 4)  # SM 5's warps started 12.5 % of the span apart
    with pytest.raises(InvalidArgumentError, match="warp timings"):
        K.per_sm_throughput(timing.ravel(), np.array([5, 9]), 2, 100)


def test_sms_that_ran_ctas_one_after_another_are_left_out():
    timing = np.array([[0, 100], [0, 100],        # CTA 0 on SM 1
                       [100, 200], [100, 200],    # CTA 1 on SM 1, after CTA 0: never 4 at once
                       [0, 100], [0, 100],        # CTAs 2 and 3 on SM 2, together
                       [0, 100], [0, 100]])
    rows = {r.sm: r for r in K.per_sm_throughput(timing.ravel(), np.array([1, 1, 2, 2]), 2, 10)}
    assert (rows[1].warps, rows[1].start_spread) == (4, 0.5)
    assert (rows[2].warps, rows[2].start_spread) == (4, 0.0)
    summary = K.summarize_sms(list(rows.values()), 4)
    assert summary["sms"] == 1 and summary["per_cycle_median"] == pytest.approx(40 / 100)


def test_start_spread():
    assert K.start_spread(np.array([[0, 10], [10, 20]])) == pytest.approx(0.5)  # one after another
    assert K.start_spread(np.array([[0, 50], [1, 100]])) == pytest.approx(0.01)  # gated, uneven ends
    assert K.start_spread(np.array([[5, 5]])) == 1.0  # no span: not usable
