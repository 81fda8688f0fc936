"""The split GEMV and congestion-probe kernels without a GPU: every shipped variant compiles for
sm_90a with no local memory, the Python mirrors of the kernel's constants match the source, the
launch planner covers every (tile, 64-k chunk) exactly once and fits shared memory, the stage
layout is bank-conflict free, and the mma fragment mapping the kernel relies on computes the right
dot products (an emulation of the PTX fragment layouts)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError, ToolNotFoundError
from smemkit.offload import gemv, split_gemv
from smemkit.offload.congestion import SOURCE as CONGESTION_SOURCE
from smemkit.runtime.compiler import compile_module, dump_sass, package_source

REGISTERS = 65536


def _check_module(module, kernels, spill_bytes: int = 0):
    """No spills and no stack frame (``spill_bytes``: a bound for experiments that are not shipped)."""
    assert set(kernels) <= set(module.resources), module.resources
    for name in kernels:
        usage = module.resources[name]
        spilled = usage.spill_store_bytes + usage.spill_load_bytes
        assert spilled <= spill_bytes and (spill_bytes or not usage.spills), \
            f"{module.label}:{name} spills: {usage}"
        assert usage.stack_bytes <= spill_bytes, f"{module.label}:{name} has a stack frame: {usage}"


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


@pytest.mark.parametrize(("host_load", "host_stage"), [(1, 1), (2, 1), (0, 0), (1, 0), (0, 2), (0, 3)])
def test_host_read_experiments_compile(host_load, host_stage):
    module = gemv.compile_variant(torch.bfloat16, "sm_90a", host_load, host_stage)
    # host_stage = 2 (prefetch, not shipped): NVRTC 13.5 spills 20 B at nt = 2 (13.0: none)
    _check_module(module, [gemv.kernel_name(nt) for nt in gemv.BATCH_TILES],
                  spill_bytes=24 if host_stage == 2 else 0)


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
    assert "LDGSTS.E.BYPASS.128" in sass  # HBM weight and x: cp.async.cg 16 B into the stage ring
    assert "LDS.128" in sass  # fragments from shared memory
    assert "LDG.E.NA.128" not in sass  # no register-held HBM weight loads
    # host rows: ld.global.cs (evict-first) into registers, the host path that measured 1.22x the
    # ideal (45 GB/s) with the whole weight on the host on the H200 (commit 8963877)
    assert "LDG.E.EF.128" in sass
    assert "STS.128" in sass  # ... staged through the host warp's shared tile
    assert "LDL" not in sass and "STL" not in sass


def _swz(row, c):
    """split_gemv.cu swz(): chunk c of stage row r sits at r * 8 + (c ^ 4 (r & 1)) (16-byte units)."""
    return row * 8 + (c ^ ((row & 1) << 2))


def _conflict_free(addrs):
    """128-bit shared accesses are served a quarter warp (8 lanes) at a time: 8 distinct bank groups."""
    return all(len({a % 8 for a in addrs[q:q + 8]}) == 8 for q in range(0, 32, 8))


@pytest.mark.parametrize("rows", sorted(set(gemv.HBM_ROWS.values())))
def test_stage_copies_cover_the_stage_once_and_are_bank_conflict_free(rows):
    """StageCopies: thread q of copy j copies row (j * 256 + q) / 8, chunk q % 8 (8 threads = one
    row's 128 contiguous bytes, whole lines per warp instruction)."""
    per_thread = rows * gemv.ROW_BYTES // 16 // gemv.THREADS
    assert per_thread * gemv.THREADS * 16 == rows * gemv.ROW_BYTES
    placed = set()
    for j in range(per_thread):
        for warp in range(gemv.WARPS):
            qs = [j * gemv.THREADS + warp * 32 + lane for lane in range(32)]
            # a warp reads 4 rows x 128 B: 4 whole lines
            assert len({q >> 3 for q in qs}) == 4 and all(len({q & 7 for q in qs if q >> 3 == r}) == 8
                                                          for r in {q >> 3 for q in qs})
            addrs = [_swz(q >> 3, q & 7) for q in qs]
            assert _conflict_free(addrs)
            placed |= set(addrs)
    assert placed == set(range(rows * 8))


@pytest.mark.parametrize("host_steps", range(1, gemv.HOST_STEPS_MAX + 1))
def test_host_staging_tile_is_bank_conflict_free_and_fits(host_steps):
    """host_role(): lane q of load i stores chunk (q % C) of row q / C (C = 4 host_steps) at
    row * S + chunk; lane (g, t) then reads rows g and g + 8 at chunk 4 u + t."""
    c = 4 * host_steps
    s = gemv.host_stage_stride(host_steps)
    assert s >= c and s * 16 % 128 == 64
    stored = set()
    for i in range(2 * host_steps):
        addrs = [((i * 32 + lane) // c) * s + (i * 32 + lane) % c for lane in range(32)]
        assert _conflict_free(addrs)
        stored |= set(addrs)
    assert stored == {r * s + ch for r in range(gemv.HOST_ROWS) for ch in range(c)}  # the whole group
    for u in range(host_steps):
        for base in (0, 8):
            assert _conflict_free([(base + (lane >> 2)) * s + 4 * u + (lane & 3) for lane in range(32)])
    assert max(stored) < gemv.host_stage_bytes(host_steps) // 16 // gemv.WARPS  # inside the warp's tile
    assert gemv.host_stage_bytes(host_steps, 0) == 0


@pytest.mark.parametrize("r0", [0, 16, 48, 112, 240])
def test_stage_fragment_reads_are_bank_conflict_free(r0):
    """compute_stage(): lane (g, t) reads rows r0 + g and r0 + g + 8, chunk 4 s + t, and x row
    8 nt + g, chunk 4 s + t; r0 is a multiple of 16."""
    for s_half in (0, 1):
        for base in (r0, r0 + 8):
            addrs = [_swz(base + (lane >> 2), 4 * s_half + (lane & 3)) for lane in range(32)]
            assert _conflict_free(addrs)
            # each lane gets the 16 bytes it asked for
            assert all(a % 8 ^ (((base + (lane >> 2)) & 1) << 2) == 4 * s_half + (lane & 3)
                       for lane, a in enumerate(addrs))


def test_python_mirrors_match_the_source():
    c = gemv.source_constants()
    assert c["GEMV_THREADS"] == gemv.THREADS and c["GEMV_WARPS"] == gemv.WARPS
    assert c["TILE_M"] == gemv.TILE_M and c["TILE_K"] == gemv.TILE_K
    assert c["ROW_CHUNKS"] * 16 == gemv.ROW_BYTES == 2 * gemv.TILE_K
    assert c["HOST_ROWS"] == gemv.HOST_ROWS and gemv.HOST_WINDOW_UNIT == gemv.THREADS * 2 * 16
    assert c["HOST_KSTEP"] == gemv.HOST_KSTEP
    assert gemv.HOST_WINDOW_UNIT == gemv.HOST_ROWS * gemv.HOST_KSTEP * 2 * gemv.WARPS
    assert c["HOST_STEPS_MAX"] == gemv.HOST_STEPS_MAX and c["HBM_DEPTH_MAX"] == gemv.HBM_DEPTH_MAX
    assert c["HOST_STAGE"] == gemv.defines(torch.bfloat16)["HOST_STAGE"]  # the default matches
    assert c["HOST_LOAD"] == gemv.defines(torch.bfloat16)["HOST_LOAD"]
    for nt in gemv.BATCH_TILES:
        assert c[f"HBM_MT_NT{nt}"] == gemv.HBM_MT[nt]
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
    ks = -(-k // gemv.TILE_K)  # HBM: 64-k stages
    hs = -(-k // gemv.HOST_KSTEP)  # host: 32-k steps
    hbm = {("hbm", t, s) for t in range(-(-n_hbm // gemv.TILE_M)) for s in range(ks)}
    host = {("host", t, s) for t in range(-(-(n_rows - n_hbm) // gemv.TILE_M)) for s in range(hs)}
    return hbm | host


@settings(max_examples=150, deadline=None)
@given(n_rows=st.integers(1, 700), k8=st.integers(1, 400), batch=st.integers(1, 64),
       host_tiles=st.integers(0, 50), all_host=st.booleans(), slots=st.sampled_from([2, 9, 132, 264]),
       host_ctas=st.integers(1, 40), host_steps=st.integers(1, gemv.HOST_STEPS_MAX),
       split_g=st.sampled_from([None, 1, 2, 7, 1000]), split_h=st.sampled_from([None, 1, 3, 1000]),
       hbm_depth=st.sampled_from([None, 1, 2, 3]), host_stage=st.sampled_from([0, 1, 2]))
def test_plan_computes_every_tile_and_k_step_exactly_once(n_rows, k8, batch, host_tiles, all_host, slots,
                                                          host_ctas, host_steps, split_g, split_h, hbm_depth,
                                                          host_stage):
    k = 8 * k8
    host_rows = n_rows if all_host else min(n_rows, 16 * host_tiles)
    n_hbm = n_rows - host_rows
    plan = gemv.plan_launch(n_rows, k, batch, n_hbm, slots=slots, host_ctas=host_ctas, host_steps=host_steps,
                            split_g=split_g, split_h=split_h, hbm_depth=hbm_depth, host_stage=host_stage)
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
        # one counter per HBM row block, then one per host 16-row tile (split_gemv.cu's indexing)
        assert plan.n_counters == -(-n_hbm // gemv.HBM_ROWS[plan.nt]) + -(-host_rows // gemv.HOST_ROWS)
    # the dynamic shared memory is the ring of the roles present, and fits with the static part
    assert plan.smem == gemv.smem_bytes(plan.nt, hbm=n_hbm > 0, host=host_rows > 0, hbm_depth=plan.hbm_depth,
                                        host_steps=host_steps, host_stage=host_stage)
    assert plan.smem + gemv.STATIC_SMEM[plan.nt] <= gemv.SMEM_PER_BLOCK_OPTIN


def test_default_rings_fit_and_keep_enough_bytes_in_flight():
    """Little's law: ~4.3 TB/s x >= 1 us loaded latency over 132 SMs wants >= 32 KB in flight per SM."""
    for nt in gemv.BATCH_TILES:
        depth = gemv.HBM_DEPTH[nt]
        assert depth <= gemv.max_hbm_depth(nt)
        smem = gemv.smem_bytes(nt, hbm=True, host=True, hbm_depth=depth, host_steps=gemv.HOST_STEPS_MAX)
        per_cta = smem + gemv.STATIC_SMEM[nt] + 1024  # + the 1 KB the driver reserves per CTA
        assert gemv.MIN_CTAS_PER_SM[nt] * per_cta <= 233472  # 228 KB per SM
        in_flight_per_sm = gemv.MIN_CTAS_PER_SM[nt] * depth * gemv.HBM_ROWS[nt] * gemv.ROW_BYTES
        assert in_flight_per_sm >= 64 * 1024
    with pytest.raises(InvalidArgumentError, match="hbm_depth"):
        gemv.plan_launch(4096, 4096, 64, 4096, slots=132, host_ctas=8, host_steps=2,
                         hbm_depth=gemv.HBM_DEPTH_MAX)
    with pytest.raises(InvalidArgumentError, match="hbm_depth"):
        gemv.plan_launch(4096, 4096, 1, 4096, slots=132, host_ctas=8, host_steps=2, hbm_depth=0)


def test_plan_for_the_benchmark_shapes_is_balanced_and_fills_the_gpu():
    for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
        for batch in (1, 8, 64):
            nt = gemv.batch_tiles(batch)
            slots = 132 * gemv.MIN_CTAS_PER_SM[nt]
            plan = gemv.plan_launch(n, k, batch, n, slots=slots, host_ctas=8, host_steps=2)
            assert plan.host_ctas == 0 and plan.hbm_ctas >= 100, plan  # all-HBM: most of the GPU streams
            assert plan.units_g % plan.hbm_ctas == 0 or plan.units_g // plan.hbm_ctas >= 2, plan
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


# ---- shared memory: what the planner offers must fit, what a caller forces must be refused clearly ----

@pytest.mark.parametrize("limit", [gemv.SMEM_PER_BLOCK_OPTIN, 166912, 101376])  # H100/H200, A100, sm_86/89
@pytest.mark.parametrize("nt", gemv.BATCH_TILES)
def test_the_planners_own_choices_always_fit(limit, nt):
    batch = 8 * nt
    if gemv.smem_bytes(nt, hbm=True, host=False, hbm_depth=1, host_steps=1) + gemv.STATIC_SMEM[nt] > limit:
        with pytest.raises(InvalidArgumentError,
                           match=r"hbm_depth = 1 \(the default\).* needs .*no HBM ring fits"):
            gemv.plan_launch(4096, 4096, batch, 2048, slots=64, host_ctas=8, host_steps=2, smem_limit=limit)
        return
    for host_steps in range(1, gemv.HOST_STEPS_MAX + 1):
        for host_stage in (0, 1, 2):
            for n_hbm in (0, 2048, 4096):
                plan = gemv.plan_launch(4096, 4096, batch, n_hbm, slots=64, host_ctas=8,
                                        host_steps=host_steps, host_stage=host_stage, smem_limit=limit)
                assert plan.smem + gemv.STATIC_SMEM[nt] <= limit, plan
                assert plan.hbm_depth == gemv.default_hbm_depth(nt, limit) <= gemv.HBM_DEPTH[nt]
    if limit == gemv.SMEM_PER_BLOCK_OPTIN:
        # 2: fastest at 3 of the 4 all-HBM batch 1-8 points of the H200 sweep (depth 1 4 % faster at
        # 4096x14336 batch 8; depth 3 5-7 % faster at batch 64): benchmarks/results/h200/offload_sweep.json
        assert gemv.default_hbm_depth(nt) == gemv.HBM_DEPTH[nt] == 2


def test_host_staging_fits_on_every_gpu_with_72_kb_per_cta():
    """default_hbm_depth() sizes the HBM ring; the host warps' tiles (<= 40 KB) come on top only as a
    max, so they fit wherever static + 40 KB does (every GPU smemkit supports: >= 99 KB per CTA)."""
    for nt in gemv.BATCH_TILES:
        assert gemv.host_stage_bytes(gemv.HOST_STEPS_MAX) + gemv.STATIC_SMEM[nt] <= 101376


def test_a_forced_depth_that_cannot_fit_names_the_argument():
    nt = gemv.batch_tiles(64)
    with pytest.raises(InvalidArgumentError, match=rf"hbm_depth = {gemv.HBM_DEPTH_MAX} needs .*"
                                                   rf"\(hbm_depth <= {gemv.max_hbm_depth(nt)} fits\)"):
        gemv.plan_launch(4096, 4096, 64, 4096, slots=132, host_ctas=8, host_steps=2,
                         hbm_depth=gemv.HBM_DEPTH_MAX)
    # the same depth is fine where it fits, and an all-host launch does not care about hbm_depth
    deepest = gemv.HBM_DEPTH_MAX
    gemv.plan_launch(4096, 4096, 1, 4096, slots=264, host_ctas=8, host_steps=2, hbm_depth=deepest)
    plan = gemv.plan_launch(4096, 4096, 64, 0, slots=132, host_ctas=8, host_steps=4, hbm_depth=deepest)
    assert plan.smem == gemv.host_stage_bytes(4)


def test_host_variant_arguments_are_checked():
    with pytest.raises(InvalidArgumentError, match="host_load=3 .* is now the default 0"):
        gemv.defines(torch.bfloat16, 3)
    for bad in (4, -1, True):
        with pytest.raises(InvalidArgumentError, match="host_load"):
            gemv.defines(torch.bfloat16, bad)
    for bad in (4, True, None):
        with pytest.raises(InvalidArgumentError, match="host_stage"):
            gemv.plan_launch(64, 64, 1, 0, slots=8, host_ctas=1, host_steps=1, host_stage=bad)


class _FakeInfo:
    smem_per_block_optin = 232448
    sm_count = 132


@pytest.mark.parametrize(("n", "k", "batch", "host_window", "host_stage"),
                         # the three launches that got occupancy 0 on the H200 (test_both_host_read_paths,
                         # commit cb352a7), then the same windows staged
                         [(7, 72, 3, 32768, 0), (203, 1000, 40, 8192, 0), (203, 1000, 40, 16384, 0),
                          (7, 72, 3, 32768, 1), (203, 1000, 40, 8192, 1), (203, 1000, 40, 16384, 2)])
def test_plan_for_asks_the_driver_about_the_launch_it_makes(monkeypatch, n, k, batch, host_window,
                                                            host_stage):
    """plan_for() queries occupancy with exactly the dynamic shared memory it launches with, and an
    answer of 0 CTAs is an error naming the arguments that set that memory (never a planned launch)."""
    import smemkit.runtime.device as device

    asked = []
    answer = {"slots": 264}

    def fake_slots(dtype, nt, device_index, host_load=0, host_stage=1, smem=0):
        asked.append((nt, host_load, host_stage, smem))
        return answer["slots"]

    monkeypatch.setattr(device, "gpu_info", lambda index=None: _FakeInfo())
    monkeypatch.setattr(split_gemv, "_slots", fake_slots)
    hs = gemv.host_steps_for_window(host_window)
    plan = gemv.plan_for(n, k, batch, 0, torch.bfloat16, 0, host_ctas=4, host_steps=hs, host_stage=host_stage)
    assert asked[-1] == (plan.nt, 0, host_stage, plan.smem)
    assert plan.smem == gemv.host_stage_bytes(hs, host_stage) and plan.slots == 264
    answer["slots"] = 0
    with pytest.raises(InvalidArgumentError, match=rf"host_window = {host_window} needs .*occupancy"):
        gemv.plan_for(n, k, batch, 0, torch.bfloat16, 0, host_ctas=4, host_steps=hs, host_stage=host_stage)
    with pytest.raises(InvalidArgumentError, match="ctas_per_sm"):
        gemv.plan_for(n, k, batch, 0, torch.bfloat16, 0, host_ctas=4, host_steps=hs, ctas_per_sm=0)


def test_plan_for_keeps_the_default_depth_on_a_smaller_gpu(monkeypatch):
    import smemkit.runtime.device as device

    class Small(_FakeInfo):
        smem_per_block_optin = 101376

    monkeypatch.setattr(device, "gpu_info", lambda index=None: Small())
    monkeypatch.setattr(split_gemv, "_slots", lambda *a, **kw: 100)
    plan = gemv.plan_for(4096, 4096, 17, 4096, torch.bfloat16, 0, host_ctas=8, host_steps=2)
    assert plan.hbm_depth == gemv.default_hbm_depth(4, 101376) and plan.smem + gemv.STATIC_SMEM[4] <= 101376
    with pytest.raises(InvalidArgumentError, match="hbm_depth = 5 needs"):
        gemv.plan_for(4096, 4096, 17, 4096, torch.bfloat16, 0, host_ctas=8, host_steps=2, hbm_depth=5)


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


def test_bulk_host_reads_need_hopper(monkeypatch):
    """host_stage = 3 (cp.async.bulk) on a GPU before sm_90: a clear error, not an NVRTC failure."""
    import smemkit.runtime.device as device
    from smemkit.errors import UnsupportedDeviceError

    class Ampere(_FakeInfo):
        supports_clusters = False
        name = "NVIDIA A100"
        capability = (8, 0)

    monkeypatch.setattr(device, "gpu_info", lambda index=None: Ampere())
    monkeypatch.setattr(split_gemv, "_slots", lambda *a, **kw: 100)
    with pytest.raises(UnsupportedDeviceError, match=r"host_stage = 3 .* sm_80"):
        gemv.plan_for(203, 1000, 8, 0, torch.bfloat16, 0, host_ctas=4, host_steps=1, host_stage=3)
    plan = gemv.plan_for(203, 1000, 8, 0, torch.bfloat16, 0, host_ctas=4, host_steps=1, host_stage=1)
    assert plan.grid >= 1
