"""The two variants prepared for measurement (not yet measured on a GPU): ``reread_l2`` (the
re-read kernel on a persistent grid capped by an L2 budget) and ``regs`` (the row held in
registers). Pure Python: labels, validation, grid size, legality, selection by name."""

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import BUILTIN, api
from smemkit.reduction.codegen import Variant, generate, kernel_name
from smemkit.reduction.kernels import (
    L2_BUDGET_FRACTION,
    l2_budget_fraction,
    legality,
    loads_in_flight_per_sm,
    regs_variant,
    regs_vectors_needed,
    reread_l2_grid,
    reread_l2_row_bytes,
)

H200_L2 = 62914560  # CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE on the H200 (h200_sxm.json)
H200_SMEM = 232448
SMS = 132
RESIDENT_1024 = SMS  # one 1024-thread CTA per SM (2048 threads per SM)


def test_labels_kernel_names_and_defaults():
    assert Variant("reread_l2").threads == 1024 and Variant("reread_l2").label == "reread_l2"
    assert Variant("reread_l2", threads=512).label == "reread_l2_t512"
    assert Variant("reread").threads == 256 and Variant("reread").label == "reread"
    assert Variant("regs", vregs=4).label == "regs_v4"
    assert kernel_name(BUILTIN["softmax_bwd"], Variant("reread_l2")) == "rr_softmax_bwd_reread_l2"
    assert kernel_name(BUILTIN["lars"], Variant("regs", vregs=2)) == "rr_lars_regs_v2"
    # the original variants keep their names, threads and launch bounds
    assert Variant("staged") == Variant("staged", threads=256)
    assert "__launch_bounds__(THREADS, 2) rr_softmax_bwd_reread(" in generate(BUILTIN["softmax_bwd"],
                                                                               Variant("reread"))
    assert "__launch_bounds__(THREADS, 1) rr_softmax_bwd_reread_l2(" in generate(
        BUILTIN["softmax_bwd"], Variant("reread_l2"))
    assert Variant("reread_l2").unroll == 4 and Variant("reread").unroll == 2


@pytest.mark.parametrize("kwargs", [dict(kind="regs"), dict(kind="regs", vregs=3),
                                    dict(kind="reread_l2", vregs=2), dict(kind="regs", vregs=2, P=2),
                                    dict(kind="reread_l2", prefetch=True)])
def test_bad_fields_are_rejected(kwargs):
    with pytest.raises(InvalidArgumentError):
        Variant(**kwargs)


def test_rows_in_flight_follow_the_l2_budget():
    sm = BUILTIN["softmax_bwd"]  # re-reads z and dy: 8 B per element
    assert reread_l2_row_bytes(sm, 32768) == 8 * 32768
    budget = L2_BUDGET_FRACTION * H200_L2  # 31.5 MB
    # 4K-8K: the L2 budget allows more rows than the GPU holds; 16K: 240; 32K: 120; 64K: 60
    assert reread_l2_grid(sm, 4096, 4096, H200_L2, RESIDENT_1024) == RESIDENT_1024
    assert reread_l2_grid(sm, 4096, 16384, H200_L2, RESIDENT_1024) == RESIDENT_1024
    assert reread_l2_grid(sm, 4096, 16384, H200_L2, 2 * SMS) == int(budget // (8 * 16384)) == 240
    assert reread_l2_grid(sm, 4096, 32768, H200_L2, RESIDENT_1024) == 120
    assert reread_l2_grid(sm, 4096, 65536, H200_L2, RESIDENT_1024) == 60
    for N in (4096, 8192, 16384, 32768, 65536):  # within the budget whenever more than one row
        rows = reread_l2_grid(sm, 4096, N, H200_L2, RESIDENT_1024)
        assert rows * reread_l2_row_bytes(sm, N) <= budget
    # the plain re-read kernel's 264 rows at 32K: 68 MB, above the whole L2
    assert 264 * reread_l2_row_bytes(sm, 32768) > H200_L2
    # more re-read bytes per element, fewer rows: wvar_bwd re-reads x, w and dy (12 B)
    assert reread_l2_grid(BUILTIN["wvar_bwd"], 4096, 32768, H200_L2, RESIDENT_1024) == 80
    # quant_int8 re-reads only x (4 B): twice softmax's rows
    assert reread_l2_grid(BUILTIN["quant_int8"], 4096, 65536, H200_L2, RESIDENT_1024) == 120
    # columns (LayerNorm's gamma) come off the budget once
    ln = BUILTIN["layernorm_bwd"]
    assert reread_l2_grid(ln, 4096, 65536, H200_L2, RESIDENT_1024) == int(
        (budget - 4 * 65536) // (8 * 65536))
    # never more rows than M, never fewer than one
    assert reread_l2_grid(sm, 7, 4096, H200_L2, RESIDENT_1024) == 7
    assert reread_l2_grid(sm, 4096, 1 << 26, H200_L2, RESIDENT_1024) == 1
    assert reread_l2_grid(sm, 4096, 32768, H200_L2, RESIDENT_1024, fraction=1.0) == RESIDENT_1024


def test_budget_fraction_override(monkeypatch):
    monkeypatch.delenv("SMEMKIT_REREAD_L2_FRACTION", raising=False)
    assert l2_budget_fraction() == L2_BUDGET_FRACTION
    monkeypatch.setenv("SMEMKIT_REREAD_L2_FRACTION", "0.25")
    assert reread_l2_grid(BUILTIN["softmax_bwd"], 4096, 32768, H200_L2, SMS) == 60
    for bad in ("0", "-1", "nan", "x", "17"):
        monkeypatch.setenv("SMEMKIT_REREAD_L2_FRACTION", bad)
        with pytest.raises(InvalidArgumentError):
            l2_budget_fraction()


def test_loads_in_flight_per_sm():
    sm = BUILTIN["softmax_bwd"]  # widest pass reads z and dy
    # reread: 2 CTAs x 256 threads x unroll 2 x 16 B x 2 inputs
    assert loads_in_flight_per_sm(sm, Variant("reread"), 32768, 264, SMS) == 2 * 256 * 2 * 16 * 2
    # reread_l2 at 32K: 120 CTAs, one per busy SM, 1024 threads x unroll 4: 128 KB
    assert loads_in_flight_per_sm(sm, Variant("reread_l2"), 32768, 120, SMS) == 1024 * 4 * 16 * 2
    # bounded by the row: a 4K row is 1024 vectors
    assert loads_in_flight_per_sm(sm, Variant("reread_l2"), 4096, 132, SMS) == 1024 * 16 * 2
    assert loads_in_flight_per_sm(BUILTIN["quant_int8"], Variant("regs", vregs=4), 16384, 132, SMS) \
        == 4096 * 16


def test_regs_vectors_and_legality():
    assert regs_vectors_needed(4096, 1024) == 1
    assert regs_vectors_needed(4097, 1024) == 2  # a partial vector at each end: 1025 or 1026
    assert regs_vectors_needed(16384, 1024) == 4
    assert regs_vectors_needed(16385, 1024) == 5
    assert regs_vectors_needed(1, 1024) == 1 and regs_vectors_needed(31, 1024) == 1
    assert regs_variant(1) == Variant("regs", vregs=1)
    assert regs_variant(8192) == Variant("regs", vregs=2)
    assert regs_variant(12000) == Variant("regs", vregs=4)
    assert regs_variant(65535) == Variant("regs", vregs=4)  # too wide: legality says why
    spec = BUILTIN["wvar_bwd"]
    for N in (1, 31, 1000, 4096, 4097, 8192, 16384):
        assert legality(spec, regs_variant(N), N, H200_SMEM, 16) is None, N
    for N in (16385, 32768, 65535):
        assert "vectors per thread" in legality(spec, regs_variant(N), N, H200_SMEM, 16)
    assert "vectors per thread" in legality(spec, Variant("regs", vregs=1), 8192, H200_SMEM, 16)
    # reread_l2 needs no dynamic shared memory: legal at any width
    assert legality(spec, Variant("reread_l2"), 1 << 24, H200_SMEM, 16) is None


def test_regs_source_holds_the_staged_inputs_and_reads_once():
    src = generate(BUILTIN["softmax_bwd"], Variant("regs", vregs=4))
    assert "#define VREGS 4" in src and "float4 r_z[VREGS];" in src and "float4 r_dy[VREGS];" in src
    assert src.count("load_vector<") == 2  # z and dy, once each, before stage 1
    assert "reused from registers" in src
    lars = generate(BUILTIN["lars"], Variant("regs", vregs=2))
    assert "r_v[" not in lars and "load_vector<true>(p_v" in lars  # v is read by one pass only


def test_reread_l2_streams_each_input_on_its_last_read():
    src = generate(BUILTIN["lars"], Variant("reread_l2"))  # w, g: passes 1-2; v: pass 2 only
    assert "load_vector<false>(p_w" in src and "load_vector<true>(p_w" in src
    assert "load_vector<false>(p_v" not in src and "#pragma unroll 4" in src


@pytest.fixture
def fake_gpu(monkeypatch):
    from smemkit.reduction import kernels

    monkeypatch.setattr(kernels, "require_kernel_support", lambda device: None)


def test_selected_by_name_never_by_default(fake_gpu):
    import torch

    dev = torch.device("cuda", 0)
    sm = BUILTIN["softmax_bwd"]
    assert api.resolve_variant(sm, 32768, dev, "reread_l2", None) == Variant("reread_l2")
    assert api.resolve_variant(sm, 32768, dev, "reread_l2_t512", None) == Variant("reread_l2", threads=512)
    assert api.resolve_variant(sm, 8192, dev, "regs", None) == Variant("regs", vregs=2)
    assert api.resolve_variant(sm, 8192, dev, "regs_t512", None) == Variant("regs", threads=512, vregs=4)
    assert api.resolve_variant(sm, 8192, dev, "reread", None) == Variant("reread")
    for bad in ("reread_l2_pf", "regs_pf", "reread_pf", "reread_l2_t384", "staged_t512"):
        with pytest.raises(InvalidArgumentError):
            api.resolve_variant(sm, 8192, dev, bad, None)
    with pytest.raises(InvalidArgumentError, match="cluster_size"):
        api.resolve_variant(sm, 8192, dev, "reread_l2", 4)
    # the default rule, the legal set (autotuning's candidates) never include them
    for N in (1, 4096, 16384, 65536, 1 << 20):
        assert api.choose_variant(sm, N, H200_SMEM, 16).kind not in api.EXPERIMENTAL
        assert all(v.kind not in api.EXPERIMENTAL
                   for v in api.legal_variants(sm, N, H200_SMEM, 16, prefetch=True))
