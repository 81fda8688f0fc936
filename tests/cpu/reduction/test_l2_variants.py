"""The two variants prepared for measurement (not yet measured on a GPU): ``reread_l2`` (the
re-read kernel on a persistent grid capped by an L2 budget) and ``regs`` (the row held in
registers). Pure Python: labels, validation, grid size, legality, selection by name."""

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import BUILTIN, api
from smemkit.reduction.codegen import Variant, generate, kernel_name, pass_batch
from smemkit.reduction.kernels import (
    L2_BUDGET_FRACTION,
    check_regs_width,
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
    assert Variant("reread_l2", threads=512, per_row=True).label == "reread_l2_t512_rows"
    assert kernel_name(BUILTIN["lars"], Variant("reread_l2", per_row=True)) == "rr_lars_reread_l2_rows"
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
    assert Variant("reread_l2").batch == 4 and Variant("reread").batch == 0
    assert Variant("reread").unroll == 2


@pytest.mark.parametrize("kwargs", [dict(kind="regs"), dict(kind="regs", vregs=3),
                                    dict(kind="reread_l2", vregs=2), dict(kind="regs", vregs=2, P=2),
                                    dict(kind="reread_l2", prefetch=True),
                                    dict(kind="reread", per_row=True), dict(kind="staged", per_row=True)])
def test_bad_fields_are_rejected(kwargs):
    with pytest.raises(InvalidArgumentError):
        Variant(**kwargs)


def test_rows_in_flight_follow_the_l2_budget():
    sm = BUILTIN["softmax_bwd"]  # re-reads z and dy: 8 B per element
    assert reread_l2_row_bytes(sm, 32768) == 8 * 32768
    budget = L2_BUDGET_FRACTION * H200_L2  # 47.2 MB
    # 4K-32K: the L2 budget allows more rows than the GPU holds of 1024-thread CTAs; 16K: 360 of
    # four CTAs per SM; 64K: 90
    assert reread_l2_grid(sm, 4096, 4096, H200_L2, RESIDENT_1024) == RESIDENT_1024
    assert reread_l2_grid(sm, 4096, 32768, H200_L2, RESIDENT_1024) == RESIDENT_1024
    assert reread_l2_grid(sm, 4096, 16384, H200_L2, 4 * SMS) == int(budget // (8 * 16384)) == 360
    assert reread_l2_grid(sm, 4096, 32768, H200_L2, 2 * SMS) == 180
    assert reread_l2_grid(sm, 4096, 65536, H200_L2, RESIDENT_1024) == 90
    for N in (4096, 8192, 16384, 32768, 65536):  # within the budget whenever more than one row
        rows = reread_l2_grid(sm, 4096, N, H200_L2, 4 * SMS)
        assert rows * reread_l2_row_bytes(sm, N) <= budget
    # the plain re-read kernel's 264 rows at 32K: 68 MB, above the whole L2
    assert 264 * reread_l2_row_bytes(sm, 32768) > H200_L2
    # more re-read bytes per element, fewer rows: wvar_bwd re-reads x, w and dy (12 B)
    assert reread_l2_grid(BUILTIN["wvar_bwd"], 4096, 32768, H200_L2, RESIDENT_1024) == 120
    # quant_int8 re-reads only x (4 B): twice softmax's rows
    assert reread_l2_grid(BUILTIN["quant_int8"], 4096, 65536, H200_L2, 2 * SMS) == 180
    # columns (LayerNorm's gamma) come off the budget once
    ln = BUILTIN["layernorm_bwd"]
    assert reread_l2_grid(ln, 4096, 65536, H200_L2, RESIDENT_1024) == int(
        (budget - 4 * 65536) // (8 * 65536))
    # never more rows than M, never fewer than one
    assert reread_l2_grid(sm, 7, 4096, H200_L2, RESIDENT_1024) == 7
    assert reread_l2_grid(sm, 4096, 1 << 26, H200_L2, RESIDENT_1024) == 1
    assert reread_l2_grid(sm, 4096, 65536, H200_L2, RESIDENT_1024, fraction=1.0) == 120


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
    # reread: 2 CTAs x 256 threads x one vector per input (load, branch, consume) x 16 B x 2 inputs
    assert loads_in_flight_per_sm(sm, Variant("reread"), 32768, 264, SMS) == 2 * 256 * 1 * 16 * 2
    # reread_l2 at 32K: 120 CTAs, one per busy SM, 1024 threads x a batch of 4: 128 KB
    assert loads_in_flight_per_sm(sm, Variant("reread_l2"), 32768, 120, SMS) == 1024 * 4 * 16 * 2
    # bounded by the row: a 4K row is 1024 vectors
    assert loads_in_flight_per_sm(sm, Variant("reread_l2"), 4096, 132, SMS) == 1024 * 16 * 2
    # a pass reading three inputs batches three vectors of each (four spill at 64 registers)
    assert pass_batch(Variant("reread_l2"), 3) == 3 and pass_batch(Variant("reread_l2"), 2) == 4
    assert pass_batch(Variant("reread_l2"), 1) == 4 and pass_batch(Variant("reread"), 2) == 0
    assert loads_in_flight_per_sm(BUILTIN["wvar_bwd"], Variant("reread_l2"), 32768, 80, SMS) \
        == 1024 * 3 * 16 * 3
    assert loads_in_flight_per_sm(BUILTIN["quant_int8"], Variant("regs", vregs=4), 16384, 132, SMS) \
        == 4096 * 16
    # regs: every input (w, g and v, which only the output pass reads) all at once
    assert loads_in_flight_per_sm(BUILTIN["lars"], Variant("regs", vregs=2), 8192, 132, SMS) \
        == 3 * 2048 * 16


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
    check_regs_width(16384, 1024)
    check_regs_width(16381, 1024)  # 4097 vectors touched at most: one partial vector at each end
    check_regs_width(8192, 512)
    for N, threads in ((16385, 1024), (16382, 1024), (20000, 1024), (8193, 512)):
        with pytest.raises(InvalidArgumentError, match=f"N = {N} is above the regs variant's "
                           f"{16 * threads} columns at {threads} threads"):
            check_regs_width(N, threads)
    # reread_l2 needs no dynamic shared memory: legal at any width
    assert legality(spec, Variant("reread_l2"), 1 << 24, H200_SMEM, 16) is None


def test_regs_source_holds_every_input_and_reads_once():
    src = generate(BUILTIN["softmax_bwd"], Variant("regs", vregs=4))
    assert "#define VREGS 4" in src and "float4 r_z[VREGS];" in src and "float4 r_dy[VREGS];" in src
    assert src.count("load_vector") == 2  # z and dy, once each, before stage 1
    assert src.count("load_vector_once(") == 2 and "__stcs" not in src  # no cache hints
    assert "reused from registers" in src
    lars = generate(BUILTIN["lars"], Variant("regs", vregs=2))  # v too, read by the output pass only
    assert "r_v[_j] = _i < _s.nvec ? load_vector_once(p_v" in lars and lars.count("load_vector") == 3


def test_reread_l2_streams_each_input_on_its_last_read():
    src = generate(BUILTIN["lars"], Variant("reread_l2"))  # w, g: passes 1-2; v: pass 2 only
    assert "load_vector<false>(p_w" in src and "load_vector<true>(p_w" in src
    assert "load_vector<false>(p_v" not in src
    assert "load_full_vector<false>(p_w" in src and "load_full_vector<true>(p_v" in src


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_reread_l2_batches_its_loads_before_using_them(name):
    """Every pass loads its batch of every input into registers (compile-time indices), then
    consumes it: the loads of one thread are independent, as many in flight as the batch."""
    spec = BUILTIN[name]
    if spec.kernel_support is not None:
        pytest.skip(spec.kernel_support)
    src = generate(spec, Variant("reread_l2"))
    passes = src.split("#pragma unroll 1\n")[1:]
    assert len(passes) == len(spec.pass_inputs)
    for text, inputs in zip(passes, spec.pass_inputs, strict=True):
        batch = pass_batch(Variant("reread_l2"), len(inputs))
        loads, consume = text.split("// consume the batch")
        for n in inputs:
            assert f"float4 _b_{n}[{batch}];" in loads and f"_b_{n}[_j] = load_full_vector<" in loads
            assert f"_b_{n}[_j] = _in ? load_vector<" in loads  # slice ends: masked, zero beyond
            assert f"const float4 {n}4 = _b_{n}[_j];" in consume and "load_vector" not in consume
        assert f"_i0 += {batch} * THREADS" in text


@pytest.fixture
def fake_gpu(monkeypatch):
    from smemkit.reduction import kernels

    monkeypatch.setattr(kernels, "require_kernel_support", lambda device: None)


def test_selected_by_name_and_in_the_legal_set(fake_gpu):
    import torch

    dev = torch.device("cuda", 0)
    sm = BUILTIN["softmax_bwd"]
    assert api.resolve_variant(sm, 64, 32768, dev, "reread_l2", None) == Variant("reread_l2")
    t512 = Variant("reread_l2", threads=512)
    assert api.resolve_variant(sm, 64, 32768, dev, "reread_l2_t512", None) == t512
    rows512 = Variant("reread_l2", threads=512, per_row=True)
    assert api.resolve_variant(sm, 64, 32768, dev, "reread_l2_t512_rows", None) == rows512
    assert api.variant_from_label("reread_l2_t512_rows", 32768) == rows512
    rows = Variant("reread_l2", per_row=True)
    assert api.resolve_variant(sm, 64, 32768, dev, "reread_l2_rows", None) == rows
    assert api.resolve_variant(sm, 64, 8192, dev, "regs", None) == Variant("regs", vregs=2)
    assert api.resolve_variant(sm, 64, 8192, dev, "regs_t512", None) == Variant("regs", threads=512, vregs=4)
    assert api.resolve_variant(sm, 64, 8192, dev, "reread", None) == Variant("reread")
    assert api.resolve_variant(sm, 64, 8192, dev, "reread_t512", None) == Variant("reread", threads=512)
    for bad in ("reread_l2_pf", "regs_pf", "reread_pf", "reread_l2_t384", "staged_t512", "staged_rows",
                "regs_rows", "reread_l2_rows_pf"):
        with pytest.raises(InvalidArgumentError):
            api.resolve_variant(sm, 64, 8192, dev, bad, None)
    with pytest.raises(InvalidArgumentError, match="cluster_size"):
        api.resolve_variant(sm, 64, 8192, dev, "reread_l2", 4)
    # a row too wide for regs is the caller's argument, not the device: named with the limit
    with pytest.raises(InvalidArgumentError, match="N = 20000 is above the regs variant's 16384 "
                       "columns at 1024 threads.*use variant='reread_l2' or a cluster variant"):
        api.resolve_variant(sm, 64, 20000, dev, "regs", None)
    with pytest.raises(InvalidArgumentError, match="8192 columns at 512 threads"):
        api.resolve_variant(sm, 64, 16384, dev, "regs_t512", None)
    # the legal set (autotuning's and calibration's candidates) holds them where they can run;
    # the fallback rule (shapes without a model table entry) never picks them
    for N in (1, 4096, 16384, 65536, 1 << 20):
        legal = api.legal_variants(sm, N, H200_SMEM, 16, prefetch=True)
        assert Variant("reread_l2") in legal and Variant("reread_l2", threads=512) in legal
        assert Variant("reread_l2", per_row=True) in legal
        assert Variant("reread_l2", threads=512, per_row=True) in legal
        assert any(v.kind == "regs" for v in legal) is (N <= 8192)
        assert Variant("reread", threads=512) in legal
        rule = api.choose_variant(sm, N, H200_SMEM, 16)
        assert rule.kind not in ("reread_l2", "regs") and rule.threads <= 256


def test_variant_from_a_table_label_round_trips():
    for v in (Variant("staged"), Variant("reread"), Variant("reread_l2"), Variant("reread_l2", threads=512),
              Variant("reread_l2", per_row=True), Variant("reread_l2", threads=512, per_row=True),
              api.regs_variant(4096, 512), api.regs_variant(8192, 512), api.regs_variant(16384, 1024)):
        assert api.variant_from_label(v.label, 8192 if v.kind != "regs" else
                                      {1: 2048, 2: 4096, 4: 8192}[v.vregs] * v.threads // 512) == v


def ldg128_runs(sass: str) -> list[int]:
    """Lengths of the runs of back-to-back 16-byte global loads (no other instruction between)."""
    import re

    runs, current = [], 0
    for line in sass.splitlines():
        if not re.search(r"/\*[0-9a-f]{4}\*/\s+\S", line):
            continue
        if "LDG" in line and ".128" in line:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    return runs


@pytest.mark.parametrize("threads", [1024, 512])
@pytest.mark.parametrize("name", ["softmax_bwd", "layernorm_bwd", "wvar_bwd"])
def test_reread_l2_sass_issues_the_batch_back_to_back(name, threads):
    """In the compiled code each pass's whole-vector path issues batch x inputs 16-byte loads with
    nothing between them, so they are all in flight before the first is used; no local memory and
    registers within the launch bound (64 at 1024 threads, and at 512 with two CTAs per SM)."""
    from smemkit.errors import ToolNotFoundError
    from smemkit.runtime.compiler import compile_module, dump_sass

    spec, variant = BUILTIN[name], Variant("reread_l2", threads=threads)
    module = compile_module(generate(spec, variant), kernel_name(spec, variant), arch="sm_90a")
    usage = module.resources[kernel_name(spec, variant)]
    assert usage.registers <= 64 and not usage.spills and usage.stack_bytes == 0, usage
    try:
        sass = dump_sass(module.cubin, function=kernel_name(spec, variant))
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    assert "LDL" not in sass and "STL" not in sass
    want = [len(p) * pass_batch(variant, len(p)) for p in spec.pass_inputs]
    assert [r for r in ldg128_runs(sass) if r > 1] == want


def test_control_twin_keeps_every_field(monkeypatch):
    """calibrate.control_ms times the work-free twin of the variant it is given: a regs variant
    keeps its vregs (rebuilding it field by field without them raised)."""
    from smemkit.reduction import calibrate

    seen = []
    monkeypatch.setattr(calibrate, "launch_args", lambda spec, v, M, N, args: seen.append(v))

    class Timing:
        median_ms = 1.0

    class Both:
        best = Timing

    monkeypatch.setattr(calibrate, "time_both_modes", lambda fn, **kw: (fn(), Both)[1])
    for variant in (Variant("regs", vregs=2), Variant("reread_l2", threads=512), Variant("cluster", 4)):
        seen.clear()
        assert calibrate.control_ms(BUILTIN["softmax_bwd"], variant, 4, 8192) == 1.0
        assert seen == [Variant(variant.kind, variant.P, variant.threads, control=True,
                                vregs=variant.vregs)]
    from smemkit.runtime.compiler import compile_module

    control = Variant("regs", vregs=4, control=True)
    spec = BUILTIN["softmax_bwd"]
    module = compile_module(generate(spec, control), kernel_name(spec, control), arch="sm_90a")
    assert not module.resources[kernel_name(spec, control)].spills


def test_every_legal_variants_label_parses_back():
    """One parser for user names and table labels: every legal variant's label gives it back."""
    for N in (1, 4096, 8192, 16384, 65536):
        for v in api.legal_variants(BUILTIN["lars"], N, H200_SMEM, 16, prefetch=True):
            kind, threads, prefetch, per_row = api.parse_variant_name(v.label)
            if v.kind == "cluster":
                assert kind.startswith("cluster") and prefetch == v.prefetch
                continue
            assert api.variant_from_label(v.label, N) == v, v.label
            assert (kind, prefetch, per_row) == (v.kind, v.prefetch, v.per_row)
