"""The split GEMV and congestion-probe kernels without a GPU: every shipped variant compiles for
sm_90a with no local memory, the Python mirrors of the kernel's constants match the source, the
launch planner covers every (tile, k-step) exactly once, and the mma fragment mapping the kernel
relies on computes the right dot products (an emulation of the PTX fragment layouts)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError, ToolNotFoundError
from smemkit.offload import gemv
from smemkit.offload.congestion import SOURCE as CONGESTION_SOURCE
from smemkit.runtime.compiler import compile_module, dump_sass, package_source

REGISTERS = 65536


def _check_module(module, kernels):
    assert set(kernels) <= set(module.resources), module.resources
    for name in kernels:
        usage = module.resources[name]
        assert not usage.spills, f"{module.label}:{name} spills: {usage}"
        assert usage.stack_bytes == 0, f"{module.label}:{name} has a stack frame: {usage}"


@pytest.fixture(scope="module")
def shipped_modules():
    # sequential: the first compile of a process imports cuda.core, which is not thread-safe
    return [(v, gemv.compile_variant(v[0], "sm_90a", v[1], v[2])) for v in gemv.shipped_variants()]


def test_every_shipped_split_kernel_compiles_without_spills(shipped_modules):
    assert {v[0] for v, _m in shipped_modules} == {torch.bfloat16, torch.float16}
    names = [gemv.kernel_name(nt) for nt in gemv.BATCH_TILES]
    for _variant, module in shipped_modules:
        _check_module(module, names)
        for nt in gemv.BATCH_TILES:
            usage = module.resources[gemv.kernel_name(nt)]
            # __launch_bounds__(256, MIN_CTAS): the registers that many CTAs per SM allow
            limit = min(255, REGISTERS // (gemv.THREADS * gemv.MIN_CTAS_PER_SM[nt]) // 8 * 8)
            assert usage.registers <= limit, (nt, usage)
            assert usage.static_smem_bytes >= gemv.WARPS * nt * 4 * 32 * 4  # the host-role reduction


@pytest.mark.parametrize(("host_load", "host_stage"), [(1, 1), (2, 1), (0, 0)])
def test_host_read_experiments_compile(host_load, host_stage):
    module = gemv.compile_variant(torch.bfloat16, "sm_90a", host_load, host_stage)
    _check_module(module, [gemv.kernel_name(nt) for nt in gemv.BATCH_TILES])


@pytest.mark.parametrize("host_load", [0, 1, 2])
def test_congestion_probe_compiles_without_spills(host_load):
    module = compile_module(package_source(CONGESTION_SOURCE), f"congestion.hl{host_load}", arch="sm_90a",
                            defines={"HOST_LOAD": host_load})
    _check_module(module, ["congestion_probe"])


def test_sass_uses_tensor_cores_and_the_intended_loads(shipped_modules):
    _variant, module = shipped_modules[0]
    try:
        sass = dump_sass(module.cubin, function=gemv.kernel_name(1))
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    assert "HMMA.16816.F32.BF16" in sass
    assert "LDG.E.NA.128.CONSTANT" in sass  # HBM weight: ld.global.nc.L1::no_allocate.v4
    assert "LDG.E.EF.128" in sass  # host weight: ld.global.cs.v4 (evict-first)
    assert "LDL" not in sass and "STL" not in sass


def test_staged_host_tiles_are_covered_once_and_bank_conflict_free():
    """split_gemv.cu HOST_STAGE: chunk q = 32 i + lane of a group goes to (row q / C, chunk q % C),
    C = 4 hs, row stride S with S*16 = 64 mod 128; 128-bit accesses are served 8 lanes at a time."""
    for hs in range(1, gemv.HOST_STEPS_MAX + 1):
        c_ = 4 * hs
        s_ = c_ if c_ % 8 == 4 else c_ + 4
        assert s_ * 16 % 128 == 64 and 16 * s_ <= 16 * (4 * gemv.HOST_STEPS_MAX + 4)
        seen = set()
        for i in range(2 * hs):
            addrs = [((32 * i + lane) // c_) * s_ + (32 * i + lane) % c_ for lane in range(32)]
            seen |= {((32 * i + lane) // c_, (32 * i + lane) % c_) for lane in range(32)}
            assert all(len({a % 8 for a in addrs[q:q + 8]}) == 8 for q in range(0, 32, 8))
        assert seen == {(r, c) for r in range(16) for c in range(c_)}
        for u in range(hs):
            for half in (0, 8):
                addrs = [((lane >> 2) + half) * s_ + 4 * u + (lane & 3) for lane in range(32)]
                assert all(len({a % 8 for a in addrs[q:q + 8]}) == 8 for q in range(0, 32, 8))


def test_python_mirrors_match_the_source():
    c = gemv.source_constants()
    assert c["GEMV_THREADS"] == gemv.THREADS and c["GEMV_WARPS"] == gemv.WARPS
    assert c["TILE_M"] == gemv.TILE_M and c["TILE_K"] == gemv.TILE_K
    assert c["HOST_STEPS_MAX"] == gemv.HOST_STEPS_MAX
    assert c["HOST_STAGE"] == gemv.defines(torch.bfloat16)["HOST_STAGE"]  # the default matches
    for nt in gemv.BATCH_TILES:
        assert c[f"HBM_STEPS_NT{nt}"] == gemv.HBM_STEPS[nt]
        assert c[f"MIN_CTAS_NT{nt}"] == gemv.MIN_CTAS_PER_SM[nt]
    cc = gemv.source_constants(package_source(CONGESTION_SOURCE))
    from smemkit.offload import congestion

    assert cc["PROBE_THREADS"] == congestion.PROBE_THREADS and cc["HBM_LPT"] == congestion.HBM_LPT


@pytest.mark.parametrize(("batch", "nt"),
                         [(1, 1), (8, 1), (9, 2), (16, 2), (17, 4), (32, 4), (33, 8), (64, 8)])
def test_batch_tiles(batch, nt):
    assert gemv.batch_tiles(batch) == nt


@pytest.mark.parametrize("bad", [0, 65, -1, 2.0, True])
def test_batch_tiles_rejects(bad):
    with pytest.raises(InvalidArgumentError, match="batch"):
        gemv.batch_tiles(bad)


def test_host_window_steps():
    assert gemv.host_steps_for_window(8192) == 1 and gemv.host_steps_for_window(32768) == 4
    for bad in (4096, 10000, 65536, 0, -8192):
        with pytest.raises(InvalidArgumentError, match="host_window"):
            gemv.host_steps_for_window(bad)
    assert gemv.window_to_host_steps(4096) == 1 and gemv.window_to_host_steps(65536) == 4
    assert gemv.window_to_host_steps(16384) == 2


# ---- the launch planner ------------------------------------------------------------------------

def _expected_pairs(n_rows, k, n_hbm):
    ks = -(-k // gemv.TILE_K)
    hbm = {("hbm", t, s) for t in range(-(-n_hbm // gemv.TILE_M)) for s in range(ks)}
    host = {("host", t, s) for t in range(-(-(n_rows - n_hbm) // gemv.TILE_M)) for s in range(ks)}
    return hbm | host


@settings(max_examples=150, deadline=None)
@given(n_rows=st.integers(1, 700), k8=st.integers(1, 400), batch=st.integers(1, 64),
       host_tiles=st.integers(0, 50), all_host=st.booleans(), slots=st.sampled_from([2, 9, 132, 264]),
       host_ctas=st.integers(1, 40), host_steps=st.integers(1, gemv.HOST_STEPS_MAX),
       split_g=st.sampled_from([None, 1, 2, 7, 1000]), split_h=st.sampled_from([None, 1, 3, 1000]))
def test_plan_computes_every_tile_and_k_step_exactly_once(n_rows, k8, batch, host_tiles, all_host, slots,
                                                          host_ctas, host_steps, split_g, split_h):
    k = 8 * k8
    host_rows = n_rows if all_host else min(n_rows, 16 * host_tiles)
    n_hbm = n_rows - host_rows
    plan = gemv.plan_launch(n_rows, k, batch, n_hbm, slots=slots, host_ctas=host_ctas, host_steps=host_steps,
                            split_g=split_g, split_h=split_h)
    cov = gemv.unit_coverage(plan, n_rows, k, n_hbm)
    assert set(cov) == _expected_pairs(n_rows, k, n_hbm)
    assert all(v == 1 for v in cov.values())
    assert 1 <= plan.grid <= slots
    assert plan.host_ctas <= host_ctas
    assert (plan.host_ctas > 0) == (host_rows > 0) and (plan.hbm_ctas > 0) == (n_hbm > 0)
    # every CTA of a tier gets the same number of units, +-1 (no wave tail)
    if plan.host_ctas:
        assert -(-plan.units_h // plan.host_ctas) - plan.units_h // plan.host_ctas <= 1
        assert plan.units_h >= plan.host_ctas
    if plan.hbm_ctas:
        assert plan.units_g >= plan.hbm_ctas
    # a split never covers an empty k-range, and the workspace holds every split's partials
    ks = -(-k // gemv.TILE_K)
    for split, steps in ((plan.split_g, plan.steps_g), (plan.split_h, plan.steps_h)):
        assert (split - 1) * steps < ks <= split * steps
    widest = max(plan.split_g if n_hbm else 1, plan.split_h if host_rows else 1)
    if widest > 1:
        assert plan.ws_floats >= widest * batch * n_rows and plan.n_counters >= 1


def test_plan_for_the_benchmark_shapes_is_balanced_and_fills_the_gpu():
    for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
        for batch in (1, 8, 64):
            nt = gemv.batch_tiles(batch)
            slots = 132 * gemv.MIN_CTAS_PER_SM[nt]
            plan = gemv.plan_launch(n, k, batch, n, slots=slots, host_ctas=8, host_steps=2)
            assert plan.host_ctas == 0 and plan.hbm_ctas >= 100, plan  # all-HBM: most of the GPU streams
            plan = gemv.plan_launch(n, k, batch, 0, slots=slots, host_ctas=8, host_steps=2)
            assert plan.host_ctas == 8 and plan.hbm_ctas == 0, plan  # all-host: exactly the window CTAs


def test_plan_rejects_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="multiple of 8"):
        gemv.plan_launch(16, 12, 1, 16, slots=8, host_ctas=1, host_steps=1)
    with pytest.raises(InvalidArgumentError, match="n_hbm"):
        gemv.plan_launch(16, 16, 1, 17, slots=8, host_ctas=1, host_steps=1)
    with pytest.raises(InvalidArgumentError, match="host_steps"):
        gemv.plan_launch(16, 16, 1, 0, slots=8, host_ctas=1, host_steps=gemv.HOST_STEPS_MAX + 1)
    with pytest.raises(InvalidArgumentError, match="batch"):
        gemv.plan_launch(16, 16, 65, 0, slots=8, host_ctas=1, host_steps=1)
    with pytest.raises(InvalidArgumentError, match="slot"):
        gemv.plan_launch(32, 16, 1, 16, slots=1, host_ctas=1, host_steps=1)


def test_split_model_prefers_few_large_units():
    # 32 row blocks over 264 slots: a handful of splits, not hundreds of tiny units
    s = gemv.choose_split(32, 264, 200, 128 * 14336 * 2, gemv.HBM_BYTES_PER_US, 32768 / gemv.HBM_LATENCY_US,
                          8.0 * 4096)
    assert 4 <= s <= 12
    # plenty of row blocks already: no split
    assert gemv.choose_split(224, 224, 100, 128 * 8192 * 2, gemv.HBM_BYTES_PER_US, 26000, 8.0 * 28672) == 1


# ---- the mma fragment mapping ------------------------------------------------------------------

def _mma_m16n8k16(a_regs, b_regs, c_regs):
    """D = A B + C for one warp, from per-lane registers laid out as in the PTX ISA
    ("Matrix fragments for mma.m16n8k16", 16-bit A/B, f32 C/D). a_regs[lane] = 4 pairs,
    b_regs[lane] = 2 pairs, c_regs[lane] = 4 floats."""
    a = np.zeros((16, 16))
    b = np.zeros((16, 8))
    c = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane // 4, lane % 4
        for reg, (row, col) in enumerate(((g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8))):
            a[row, col], a[row, col + 1] = a_regs[lane][reg]
        for reg, row in enumerate((2 * t, 2 * t + 8)):
            b[row, g], b[row + 1, g] = b_regs[lane][reg]
        for i, (row, col) in enumerate(((g, 2 * t), (g, 2 * t + 1), (g + 8, 2 * t), (g + 8, 2 * t + 1))):
            c[row, col] = c_regs[lane][i]
    d = a @ b + c
    out = []
    for lane in range(32):
        g, t = lane // 4, lane % 4
        out.append([d[g, 2 * t], d[g, 2 * t + 1], d[g + 8, 2 * t], d[g + 8, 2 * t + 1]])
    return out


def test_the_kernels_fragment_mapping_computes_w_times_x():
    """split_gemv.cu: lane (g, t) loads W[g][8t..8t+7], W[g+8][8t..8t+7] and x[g][8t..8t+7] as
    uint4 (pairs .x .y .z .w); mma 1 takes a = (Wg.x, Wg8.x, Wg.y, Wg8.y), b = (x.x, x.y),
    mma 2 the .z/.w pairs; c0 c1 are (row g, batch 2t, 2t+1), c2 c3 row g+8."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 32))
    x = rng.standard_normal((8, 32))

    def pairs(row):  # a 16-byte load of 8 elements as four (lo, hi) register pairs
        return [(row[2 * i], row[2 * i + 1]) for i in range(4)]

    acc = [[0.0] * 4 for _ in range(32)]
    for first, second in ((0, 1), (2, 3)):
        a_regs, b_regs = [], []
        for lane in range(32):
            g, t = lane // 4, lane % 4
            cols = slice(8 * t, 8 * t + 8)
            wg, wg8, xg = pairs(w[g, cols]), pairs(w[g + 8, cols]), pairs(x[g, cols])
            a_regs.append([wg[first], wg8[first], wg[second], wg8[second]])
            b_regs.append([xg[first], xg[second]])
        acc = _mma_m16n8k16(a_regs, b_regs, acc)
    want = w @ x.T  # (16 rows, 8 batch columns)
    for lane in range(32):
        g, t = lane // 4, lane % 4
        got = acc[lane]
        np.testing.assert_allclose(got, [want[g, 2 * t], want[g, 2 * t + 1], want[g + 8, 2 * t],
                                         want[g + 8, 2 * t + 1]], rtol=1e-12, atol=1e-12)
