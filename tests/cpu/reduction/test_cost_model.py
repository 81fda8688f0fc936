"""The profitability model's terms against hand-computed values (paper Eq. 3-9)."""

import dataclasses
import math

import pytest

from smemkit.hw.profile import DsmemPrimitives, builtin_profiles
from smemkit.reduction import BUILTIN
from smemkit.reduction.cost_model import (
    P_TIE_FRACTION,
    SINGLE_READ_CTA_THREADS,
    SINGLE_READ_MAX_CTAS_PER_SM,
    Measured,
    Terms,
    Verdict,
    crossover,
    dispatch_choice,
    evaluate,
    rereads_from_hbm,
    save_basis,
    shape_of,
)

PRIMS = DsmemPrimitives(local_load_cycles=30, remote_load_cycles=190, local_read_bpc=20.0,
                        remote_read_bpc=4.0, local_store_bpc=25.0, remote_store_bpc=20.0,
                        barrier_cycles={2: 400})
PROFILE = dataclasses.replace(builtin_profiles()["h100_sxm"], sm_clock_ghz=2.0, sm_count=100,
                              hbm_tbps=4.0, smem_per_block_bytes=232448, dsmem=PRIMS)
LN = BUILTIN["layernorm_bwd"]  # b_B 24, b_reread 12, b_keep 8, q = (1, 3)


def test_terms_match_hand_computation():
    M, N, P = 2000, 65536, 8
    measured = Measured(baseline_ms=1.0, control_excess_ms={8: 0.05}, resident_clusters={8: 40})
    (t,) = evaluate(shape_of(LN, M, N), PROFILE, measured, sizes=(P,)).terms
    assert t.legal and t.waves == 50  # ceil(2000 / 40)
    assert t.t_save == pytest.approx(1.0 * 12 / 24)  # Eq. 7 at the achieved bandwidth
    slice_bytes = 8192 * 8  # ceil(N / P) * b_keep
    # stage 1 reads x, one of the two staged inputs, while dy still arrives: half the replay hides
    assert t.t_replay == pytest.approx(50 * slice_bytes * 0.5 / (2.0e9 * 20.0) * 1e3)
    # source rate per SM: 2000 * 65536 * 24 B / 1 ms / (2 GHz * 100 SMs) = 15.7 B/cycle, slower
    # than the 25 B/cycle local store rate: the deposit hides under the input stream.
    assert t.t_deposit == 0.0
    assert t.t_dsm == pytest.approx(50 * 4 * 7 * 4 / (2.0e9 * 20.0) * 1e3)
    assert t.t_ctrl == 0.05
    # 40 clusters of 8 CTAs on 100 SMs: 3.2 CTAs per SM share the overheads' time with streaming
    assert t.ctas_per_sm == pytest.approx(3.2)
    assert t.delta == pytest.approx(t.t_save - (0.05 + t.t_replay + t.t_dsm) / 3.2)
    # fewer resident CTAs than SMs: k stays 1 (every overhead shows)
    few = Measured(baseline_ms=1.0, control_excess_ms={8: 0.05}, resident_clusters={8: 5})
    (t1,) = evaluate(shape_of(LN, M, N), PROFILE, few, sizes=(P,)).terms
    assert t1.ctas_per_sm == 1.0
    assert t1.delta == pytest.approx(t1.t_save - 0.05 - t1.t_replay - t1.t_deposit - t1.t_dsm)
    # fewer rows than resident clusters: only M clusters run (16 x 8 CTAs on 100 SMs: k = 1.28)
    (t2,) = evaluate(shape_of(LN, 16, N), PROFILE, measured, sizes=(P,)).terms
    assert t2.ctas_per_sm == pytest.approx(1.28)


def test_replay_share_hidden_under_the_inputs_the_first_pass_does_not_read():
    """The staged share the first pass reads while the other staged inputs still arrive:
    layernorm_bwd x of (x, dy), wvar_bwd (w, x) of (x, w, dy), softmax_bwd z of (z, dy); none
    where the first pass reads every staged input; the ablation (serialized staging) charges all."""
    shares = {name: shape_of(BUILTIN[name], 64, 4096).early_replay_share for name in BUILTIN
              if BUILTIN[name].kernel_support is None}
    assert shares == pytest.approx({"layernorm_bwd": 0.5, "wvar_bwd": 2 / 3, "softmax_bwd": 0.5,
                                    "pearson_bwd": 0.0, "lars": 0.0, "quant_int8": 0.0})
    measured = Measured(baseline_ms=1.0, control_excess_ms={8: 0.05}, resident_clusters={8: 40})
    wvar = shape_of(BUILTIN["wvar_bwd"], 2000, 65536)
    (t,) = evaluate(wvar, PROFILE, measured, sizes=(8,)).terms
    unhidden = dataclasses.replace(wvar, early_replay_share=0.0)
    (whole,) = evaluate(unhidden, PROFILE, measured, sizes=(8,)).terms
    (ablation,) = evaluate(wvar, PROFILE, measured, sizes=(8,), ablation=True).terms
    assert t.t_replay == pytest.approx(whole.t_replay / 3)
    assert ablation.t_replay == pytest.approx(whole.t_replay)


def test_close_deltas_are_a_tie_won_by_the_smaller_cluster():
    """P whose ΔT is within P_TIE_FRACTION x T_B of the largest: the smallest such P; never one
    whose ΔT is not positive; the ablation keeps the largest ΔT."""
    T_B = 1.0
    tie = P_TIE_FRACTION * T_B
    terms = (Terms(2, True, None, t_save=0.10), Terms(4, True, None, t_save=0.10 + 0.9 * tie),
             Terms(8, True, None, t_save=0.10 + 1.5 * tie), Terms(16, False, "too big"))
    assert Verdict(terms, tie).best.P == 4  # P = 2 is 1.5 tie below P = 8's ΔT: not a tie
    assert Verdict(terms).best.P == 8
    near_zero = (Terms(2, True, None, t_save=-0.01), Terms(4, True, None, t_save=0.5 * tie))
    assert Verdict(near_zero, tie).best.P == 4 and Verdict(near_zero, tie).profitable
    measured = Measured(baseline_ms=T_B, control_excess_ms={4: 0.0, 8: 0.0}, resident_clusters={4: 60, 8: 30})
    assert evaluate(shape_of(LN, 2000, 65536), PROFILE, measured).tie_ms == pytest.approx(tie)
    assert evaluate(shape_of(LN, 2000, 65536), PROFILE, measured, ablation=True).tie_ms == 0.0
    other_kernels = dataclasses.replace(shape_of(LN, 2000, 65536), p_tie_fraction=0.0)  # CREDIT's
    assert evaluate(other_kernels, PROFILE, measured).tie_ms == 0.0


def test_deposit_charged_when_the_source_outruns_shared_memory_stores():
    # T_B so short that the per-SM input stream beats the local store rate
    measured = Measured(baseline_ms=0.1, control_excess_ms={8: 0.0}, resident_clusters={8: 40})
    (t,) = evaluate(shape_of(LN, 2000, 65536), PROFILE, measured, sizes=(8,)).terms
    source_bpc = 2000 * 65536 * 24 / 0.1e-3 / (2.0e9 * 100)
    expected = 50 * 8192 * 8 * (1 / 25.0 - 1 / source_bpc) / 2.0e9 * 1e3
    assert t.t_deposit == pytest.approx(expected)


def test_ablation_uses_peak_bandwidth_and_serialized_staging():
    measured = Measured(baseline_ms=1.0, control_excess_ms={8: 0.05}, resident_clusters={8: 40})
    (t,) = evaluate(shape_of(LN, 2000, 65536), PROFILE, measured, sizes=(8,), ablation=True).terms
    assert t.t_save == pytest.approx(2000 * 65536 * 12 / 4.0e12 * 1e3)
    assert t.t_deposit == pytest.approx(50 * 8192 * 8 / (2.0e9 * 25.0) * 1e3)
    assert t.ctas_per_sm == 1.0  # serialized: nothing overlaps


def test_illegal_sizes_and_missing_controls_are_reported():
    measured = Measured(baseline_ms=1.0, control_excess_ms={4: 0.0, 8: 0.0})
    terms = {t.P: t for t in evaluate(shape_of(LN, 2048, 65536), PROFILE, measured).terms}
    assert not terms[2].legal and "shared memory" in terms[2].reason  # 3 x 32K x 4 B per CTA
    assert not terms[16].legal and "no control-kernel timing" in terms[16].reason
    assert terms[2].delta == -math.inf


def test_verdict_and_crossover():
    cheap = Measured(baseline_ms=1.0, control_excess_ms={8: 0.0}, resident_clusters={8: 40})
    costly = Measured(baseline_ms=1.0, control_excess_ms={8: 10.0}, resident_clusters={8: 40})
    win = evaluate(shape_of(LN, 2000, 65536), PROFILE, cheap, sizes=(8,))
    lose = evaluate(shape_of(LN, 2000, 32768), PROFILE, costly, sizes=(8,))
    assert win.profitable and win.best.P == 8 and not lose.profitable
    assert crossover({32768: lose, 65536: win}) == 65536
    assert crossover({32768: lose}) is None


def test_dispatch_choice_weighs_the_triton_kernel_against_the_models_pick():
    shape = shape_of(LN, 2000, 65536)
    cheap = Measured(baseline_ms=1.0, control_excess_ms={8: 0.0}, resident_clusters={8: 40})
    win = evaluate(shape, PROFILE, cheap, sizes=(8,))
    predicted = 1.0 - win.best.delta  # the cluster kernel's predicted time
    assert win.profitable and 0 < predicted < 1.0
    assert dispatch_choice(win, cheap) == ("cluster", 8)  # no Triton time: the model decides
    slower = dataclasses.replace(cheap, triton_ms=predicted * 1.01)
    faster = dataclasses.replace(cheap, triton_ms=predicted * 0.99)
    assert dispatch_choice(win, slower) == ("cluster", 8)
    assert dispatch_choice(win, faster) == ("triton", 1)  # below the cluster kernel's prediction
    costly = Measured(baseline_ms=1.0, control_excess_ms={8: 10.0}, resident_clusters={8: 40})
    lose = evaluate(shape_of(LN, 2000, 32768), PROFILE, costly, sizes=(8,))
    assert dispatch_choice(lose, costly) == ("baseline", 1)
    assert dispatch_choice(lose, dataclasses.replace(costly, triton_ms=1.0)) == ("baseline", 1)  # a tie
    assert dispatch_choice(lose, dataclasses.replace(costly, triton_ms=0.97)) == ("triton", 1)


# a row-resident baseline counts its CTAs in 256-thread units (regs_v2_t512: two per CTA)
@pytest.mark.parametrize(("variant", "unit"), [("staged", 1), ("reread_l2", 1), ("reread_l2_t512", 1),
                                               ("regs_v2_t512", 2), ("regs_v1_t256", 1), ("regs_v1", 4)])
def test_a_single_read_baseline_saves_only_its_stall_with_few_ctas_per_sm(variant, unit):
    shape = shape_of(LN, 2000, 65536)
    floor_ms = 2000 * 65536 * (24 - 12) / 4.0e12 * 1e3  # compulsory bytes at B_HBM: 0.393 ms
    assert SINGLE_READ_MAX_CTAS_PER_SM == 3 and SINGLE_READ_CTA_THREADS == 256
    for units, expected in ((None, 0.0), (5.0, 0.0), (3.5, 0.0), (3.0, 1.0 - floor_ms),
                            (2.0, 1.0 - floor_ms), (1.0, 1.0 - floor_ms), (0.45, 1.0 - floor_ms)):
        per_sm = None if units is None else units / unit
        measured = Measured(baseline_ms=1.0, control_excess_ms={8: 0.0}, resident_clusters={8: 40},
                            baseline_variant=variant, baseline_ctas_per_sm=per_sm)
        (t,) = evaluate(shape, PROFILE, measured, sizes=(8,)).terms
        assert t.t_save == pytest.approx(expected), (per_sm, units)
        # the deposit sees the baseline streaming compulsory bytes only (no re-read)
        assert t.t_deposit == 0.0
    fast = Measured(baseline_ms=0.9 * floor_ms, control_excess_ms={8: 0.0}, resident_clusters={8: 40},
                    baseline_variant=variant, baseline_ctas_per_sm=1.0 / unit)
    (t,) = evaluate(shape, PROFILE, fast, sizes=(8,)).terms
    assert t.t_save == 0.0 and t.delta < 0  # already at the floor: nothing to save


@pytest.mark.parametrize(("variant", "units"), [("reread", 3.0), ("reread_t512", 6.0), ("reread_l2", 3.0),
                                                ("reread_l2_t512", 3.0), ("reread_l2_rows", 3.0)])
def test_one_cta_per_row_reread_baselines_count_256_thread_units(variant, units):
    """reread / reread_t512 count in 256-thread units like staged and regs; reread_l2's persistent
    CTAs stay CTAs. Three CTAs per SM each."""
    from smemkit.reduction.cost_model import stall_units

    measured = Measured(baseline_ms=1.0, control_excess_ms={8: 0.0}, resident_clusters={8: 40},
                        baseline_variant=variant, baseline_ctas_per_sm=3.0)
    assert stall_units(measured) == units


def test_save_basis_names_the_rule_and_the_residency_it_compared():
    shape = shape_of(LN, 2000, 65536)

    def basis(variant, per_sm):
        return save_basis(shape, PROFILE, Measured(baseline_ms=1.0, control_excess_ms={8: 0.0},
                                                   baseline_variant=variant, baseline_ctas_per_sm=per_sm))

    assert "re-reads HBM" in basis("reread", None) and "Eq. 7" in basis("reread", 4.0)
    assert basis("staged", 1.0).endswith("1.00 CTAs of 256 threads per SM (at most 3): T_save = its "
                                         "time above the HBM streaming floor")
    assert "4.00 CTAs of 256 threads per SM (above 3): T_save = 0" in basis("regs_v4_t512", 2.0)
    assert "reads once at 2.00 CTAs per SM (at most 3)" in basis("reread_l2_t512_rows", 2.0)
    assert "residency unknown: T_save = 0" in basis("staged", None)


def test_a_reread_kernel_counts_as_single_read_when_its_rows_in_flight_fit_the_l2():
    """Eq. 7 for a re-read baseline only when its re-reads come from HBM (the H200: 50 MB L2,
    132 SMs, lars re-reads w and g: 8 B per element)."""
    from smemkit.reduction.kernels import L2_BUDGET_FRACTION

    h200 = builtin_profiles()["h200_sxm"]
    lars = BUILTIN["lars"]
    base = Measured(baseline_ms=0.084, control_excess_ms={2: 0.0}, baseline_variant="reread_t512",
                    baseline_ctas_per_sm=4.0)
    narrow, wide = shape_of(lars, 4096, 4096), shape_of(lars, 4096, 65536)
    fits = 4.0 * h200.sm_count * 4096 * narrow.reread_bytes
    assert fits <= L2_BUDGET_FRACTION * h200.l2_bytes < 4.0 * h200.sm_count * 65536 * wide.reread_bytes
    assert not rereads_from_hbm(narrow, h200, base)  # re-reads hit the L2
    assert rereads_from_hbm(wide, h200, base)  # they overflow it: Eq. 7
    assert rereads_from_hbm(narrow, h200, dataclasses.replace(base, baseline_ctas_per_sm=None))
    assert rereads_from_hbm(narrow, h200, dataclasses.replace(base, baseline_variant="reread",
                                                              baseline_ctas_per_sm=None))
    for label in ("staged", "regs_v4_t256", "reread_l2_t512_rows"):
        assert not rereads_from_hbm(wide, h200, dataclasses.replace(base, baseline_variant=label))
