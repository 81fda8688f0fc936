"""The split decode attention without a GPU: both dtypes' kernels (all four group sizes) compile
for sm_90a with no local memory, the Python mirrors match the source, the launch planner loads
every 16-token tile below a sequence's length exactly once (hypothesis), the shared-memory swizzle
is a conflict-free bijection, a numpy emulation of the kernel's algorithm (per-warp online
softmax in base 2, warp merge, chunk merge in order, masking) matches float64 attention, and the
argument errors need no GPU."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError, ToolNotFoundError
from smemkit.offload import attention as att
from smemkit.runtime.compiler import dump_sass

REGISTERS = 65536


@pytest.fixture(scope="module")
def modules():
    return [(dt, att.compile_variant(dt, "sm_90a")) for dt in att.shipped_variants()]


def test_every_attention_kernel_compiles_without_spills(modules):
    assert {dt for dt, _ in modules} == {torch.bfloat16, torch.float16}
    limit = min(255, REGISTERS // (att.THREADS * att.MIN_CTAS_PER_SM) // 8 * 8)
    for _dt, module in modules:
        for gt in att.GROUP_TILES:
            usage = module.resources[att.kernel_name(gt)]
            assert not usage.spills, (module.label, gt, usage)
            assert usage.stack_bytes == 0, (module.label, gt, usage)
            assert usage.registers <= limit, (gt, usage)
            # 4 warps x (K + V tile 8 KB + probabilities 512 B + rescale 32 B) + the arrival flag
            assert usage.static_smem_bytes == att.WARPS * (att.WARP_TILE_BYTES + 16 * 8 * 4 + 32) + 4


def test_sass_uses_tensor_cores_and_the_intended_loads(modules):
    _dt, module = modules[0]
    try:
        sass = dump_sass(module.cubin, function=att.kernel_name(8))
    except ToolNotFoundError as exc:
        pytest.skip(str(exc))
    assert "HMMA.16816.F32.BF16" in sass
    assert "LDG.E.NA.128.CONSTANT" in sass  # HBM K/V: ld.global.nc.L1::no_allocate.v4
    assert "LDG.E.EF.128" in sass  # host K/V: ld.global.cs.v4
    assert "LDL" not in sass and "STL" not in sass


def test_python_mirrors_match_the_source():
    c = att.source_constants()
    assert c["ATT_THREADS"] == att.THREADS == c["HEAD_DIM"] == att.HEAD_DIM  # one thread per d in the merge
    assert c["ATT_WARPS"] == att.WARPS and c["TILE_T"] == att.TILE_T and c["MAX_GROUP"] == att.MAX_GROUP
    assert c["HOST_WARPS_MAX"] == att.HOST_WARPS_MAX and c["ATT_MIN_CTAS"] == att.MIN_CTAS_PER_SM
    assert c["ROW_CHUNKS"] * 16 == att.HEAD_DIM * 2
    assert att.HOST_WINDOW_UNIT == 8192  # the split GEMV's unit too
    assert len(att.KERNEL_PARAMS) == 22


def test_swizzle_is_a_bijection_and_conflict_free():
    """split_attention.cu swz(r, c) = 16 r + (c ^ 4 (r & 1)); 128-bit accesses are served 8 lanes
    at a time, so 8 consecutive lanes must hit 8 distinct 16-byte bank groups (position % 8)."""
    def swz(r, c):
        return r * 16 + (c ^ ((r & 1) << 2))

    assert sorted(swz(r, c) for r in range(16) for c in range(16)) == list(range(256))
    for j in range(8):  # stores: lane i -> row 2j + (i >> 4), chunk i & 15
        addrs = [swz(2 * j + (i >> 4), i & 15) for i in range(32)]
        assert all(len({a % 8 for a in addrs[q:q + 8]}) == 8 for q in range(0, 32, 8))
    for s in range(4):  # mma fragments: lane (g, t) reads row g (and g + 8), chunk 4s + t
        for extra in (0, 8):
            addrs = [swz((i >> 2) + extra, 4 * s + (i & 3)) for i in range(32)]
            assert all(len({a % 8 for a in addrs[q:q + 8]}) == 8 for q in range(0, 32, 8))
    for tok in range(16):  # P.V: lane i reads row tok, chunk i & 15
        addrs = [swz(tok, i & 15) for i in range(32)]
        assert all(len({a % 8 for a in addrs[q:q + 8]}) == 8 for q in range(0, 32, 8))


# ---- small pure functions -------------------------------------------------------------------------

@pytest.mark.parametrize(("group", "gt"), [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (7, 8), (8, 8)])
def test_group_tile(group, gt):
    assert att.group_tile(group) == gt


@pytest.mark.parametrize("bad", [0, 9, 16, -1, 2.0, True])
def test_group_tile_rejects(bad):
    with pytest.raises(InvalidArgumentError, match="GQA group"):
        att.group_tile(bad)


def test_host_window_warps():
    assert [att.host_warps_for_window(w) for w in (8192, 16384, 24576, 32768)] == [1, 2, 3, 4]
    for bad in (4096, 10000, 40960, 0, -8192, True):
        with pytest.raises(InvalidArgumentError, match="host_window"):
            att.host_warps_for_window(bad)
    assert att.window_to_host_warps(4096) == 1 and att.window_to_host_warps(65536) == 4


@given(batch=st.integers(1, 600), ratio=st.floats(0.0, 1.0))
def test_host_seqs_for_ratio(batch, ratio):
    h = att.host_seqs_for_ratio(batch, ratio)
    assert 0 <= h <= batch and abs(h - ratio * batch) <= 0.5
    assert att.host_seqs_for_ratio(batch, 0.0) == 0 and att.host_seqs_for_ratio(batch, 1.0) == batch


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.5", True])
def test_host_seqs_rejects(bad):
    with pytest.raises(InvalidArgumentError, match="ratio"):
        att.host_seqs_for_ratio(8, bad)


# ---- the launch planner ------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(batch=st.integers(1, 12), h_kv=st.integers(1, 4), group=st.integers(1, 8), seq_len=st.integers(1, 700),
       host_frac=st.floats(0, 1), slots=st.sampled_from([2, 9, 132, 396]), host_ctas=st.integers(1, 40),
       host_warps=st.integers(1, att.HOST_WARPS_MAX), chunks_g=st.sampled_from([None, 1, 3, 1000]),
       chunks_h=st.sampled_from([None, 1, 2, 1000]), data=st.data())
def test_plan_loads_every_tile_below_the_length_exactly_once(batch, h_kv, group, seq_len, host_frac, slots,
                                                            host_ctas, host_warps, chunks_g, chunks_h, data):
    b_hbm = batch - att.host_seqs_for_ratio(batch, host_frac)
    lengths = data.draw(st.lists(st.integers(0, seq_len + 5), min_size=batch, max_size=batch))
    plan = att.plan_attention(batch, h_kv, group, seq_len, b_hbm, slots=slots, host_ctas=host_ctas,
                              host_warps=host_warps, chunks_g=chunks_g, chunks_h=chunks_h)
    for lens in (None, lengths):
        cov = att.unit_coverage(plan, batch, h_kv, seq_len, b_hbm, lens)
        want = set()
        for pair in range(batch * h_kv):
            n = seq_len if lens is None else min(lens[pair // h_kv], seq_len)
            want |= {(pair, t0) for t0 in range(0, n, att.TILE_T)}
        assert set(cov) == want and all(v == 1 for v in cov.values())
    assert 1 <= plan.grid <= slots and plan.host_ctas <= host_ctas
    assert (plan.host_ctas > 0) == (b_hbm < batch) and (plan.hbm_ctas > 0) == (b_hbm > 0)
    tiers = ((plan.nch_g, plan.chunk_g, b_hbm > 0), (plan.nch_h, plan.chunk_h, b_hbm < batch))
    for nch, chunk, used in tiers:
        if used:
            assert chunk % att.CHUNK_MULTIPLE == 0 and (nch - 1) * chunk < seq_len <= nch * chunk
            assert nch <= max(1, plan.nch_stride)
    if plan.nch_stride:
        assert plan.ws_floats == batch * h_kv * plan.nch_stride * group * att.PARTIAL_FLOATS
        assert plan.n_counters == batch * h_kv
    else:
        assert plan.ws_floats == 0 and plan.n_counters == 0
    assert plan.gt == att.group_tile(group) and len(plan.kernel_args()) == 7


def test_plan_for_the_benchmark_shapes():
    for batch in (8, 64, 512):
        for seq_len in (1024, 4096, 32768):
            for b_hbm in (batch, batch // 2, 0):
                plan = att.plan_attention(batch, 8, 4, seq_len, b_hbm, slots=396, host_ctas=8, host_warps=2)
                if b_hbm == batch:
                    assert plan.host_ctas == 0 and plan.hbm_ctas >= 132, plan  # all-HBM fills the GPU
                if b_hbm == 0:
                    assert plan.hbm_ctas == 0 and plan.host_ctas == 8, plan  # all-host: the window CTAs
                if b_hbm:
                    assert plan.units_g >= plan.hbm_ctas


def test_plan_rejects_bad_arguments():
    with pytest.raises(InvalidArgumentError, match="b_hbm"):
        att.plan_attention(4, 8, 4, 64, 5, slots=8, host_ctas=1, host_warps=1)
    with pytest.raises(InvalidArgumentError, match="host_warps"):
        att.plan_attention(4, 8, 4, 64, 2, slots=8, host_ctas=1, host_warps=5)
    with pytest.raises(InvalidArgumentError, match="slot"):
        att.plan_attention(4, 8, 4, 64, 2, slots=1, host_ctas=1, host_warps=1)
    with pytest.raises(InvalidArgumentError, match="GQA"):
        att.plan_attention(4, 8, 9, 64, 2, slots=8, host_ctas=1, host_warps=1)


# ---- the algorithm, emulated -------------------------------------------------------------------

def emulate(q, k, v, lengths, plan, b_hbm, scale):
    """The kernel's arithmetic order in float64: per warp, 16-token tiles with an online softmax in
    base 2 (-inf guards as in the source); warps merged in order; chunks merged in order."""
    batch, h_q, d = q.shape
    h_kv, seq_len = k.shape[1], k.shape[2]
    group = h_q // h_kv
    s2 = scale * att.LOG2E
    out = np.zeros_like(q)
    for pair in range(batch * h_kv):
        b, hk = divmod(pair, h_kv)
        host = b >= b_hbm
        nch, chunk, warps = ((plan.nch_h, plan.chunk_h, plan.host_warps) if host
                             else (plan.nch_g, plan.chunk_g, att.WARPS))
        length = min(max(lengths[b], 0), seq_len)
        qg = q[b, hk * group:(hk + 1) * group]
        parts = []
        for c in range(nch):
            t_begin, t_end = c * chunk, min(c * chunk + chunk, length)
            states = []
            for w in range(att.WARPS):
                m = np.full(group, -np.inf)
                lsum = np.zeros(group)
                o = np.zeros((group, d))
                if w < warps:
                    for t0 in range(t_begin + w * att.TILE_T, t_end, warps * att.TILE_T):
                        toks = np.arange(t0, t0 + att.TILE_T)
                        valid = toks < t_end
                        kt = np.where(valid[:, None], k[b, hk, np.minimum(toks, seq_len - 1)], 0.0)
                        vt = np.where(valid[:, None], v[b, hk, np.minimum(toks, seq_len - 1)], 0.0)
                        s = np.where(valid[None, :], (qg @ kt.T) * s2, -np.inf)
                        n = np.maximum(m, s.max(axis=1))
                        u = np.where(n == -np.inf, 0.0, n)
                        alpha = np.exp2(m - u[:])
                        p = np.exp2(s - u[:, None])
                        m = n
                        lsum = lsum * alpha + p.sum(axis=1)
                        o = o * alpha[:, None] + p @ vt
                states.append((m, lsum, o))
            mw = np.max([st_[0] for st_ in states], axis=0)
            u = np.where(mw == -np.inf, 0.0, mw)
            lsum = sum(st_[1] * np.exp2(st_[0] - u) for st_ in states)
            o = sum(st_[2] * np.exp2(st_[0] - u)[:, None] for st_ in states)
            parts.append((mw, lsum, o))
        mw = np.max([p_[0] for p_ in parts], axis=0)
        u = np.where(mw == -np.inf, 0.0, mw)
        lsum = sum(p_[1] * np.exp2(p_[0] - u) for p_ in parts)
        o = sum(p_[2] * np.exp2(p_[0] - u)[:, None] for p_ in parts)
        safe = np.where(lsum > 0, lsum, 1.0)
        out[b, hk * group:(hk + 1) * group] = np.where((lsum > 0)[:, None], o / safe[:, None], 0.0)
    return out


@pytest.mark.parametrize(("batch", "h_kv", "group", "seq_len", "b_hbm", "chunks"),
                         [(3, 2, 4, 200, 2, (None, None)), (1, 1, 1, 77, 1, (3, 1)),
                          (4, 1, 8, 130, 0, (1, 2)), (2, 2, 3, 1000, 1, (5, 7))])
def test_emulated_kernel_algorithm_matches_attention(batch, h_kv, group, seq_len, b_hbm, chunks):
    rng = np.random.default_rng(seq_len)
    d = att.HEAD_DIM
    q = rng.standard_normal((batch, h_kv * group, d))
    k = rng.standard_normal((batch, h_kv, seq_len, d))
    v = rng.standard_normal((batch, h_kv, seq_len, d))
    lengths = [seq_len, 1, 7, 0, seq_len - 1][:batch]
    plan = att.plan_attention(batch, h_kv, group, seq_len, b_hbm, slots=16, host_ctas=3, host_warps=2,
                              chunks_g=chunks[0], chunks_h=chunks[1])
    got = emulate(q, k, v, lengths, plan, b_hbm, d ** -0.5)
    want = att.reference_attention(torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v),
                                   torch.tensor(lengths, dtype=torch.int32)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    for b, n in enumerate(lengths):
        if n == 0:
            assert not got[b].any()


def test_reference_attention_against_a_loop():
    torch.manual_seed(0)
    q = torch.randn(2, 6, 128, dtype=torch.float64)
    k = torch.randn(2, 3, 20, 128, dtype=torch.float64)
    v = torch.randn(2, 3, 20, 128, dtype=torch.float64)
    lengths = torch.tensor([20, 5], dtype=torch.int32)
    got = att.reference_attention(q, k, v, lengths, scale=0.3)
    for b in range(2):
        for h in range(6):
            n = int(lengths[b])
            s = (k[b, h // 2, :n] @ q[b, h]) * 0.3
            want = torch.softmax(s, 0) @ v[b, h // 2, :n]
            torch.testing.assert_close(got[b, h], want)


# ---- argument errors (no GPU) ------------------------------------------------------------------

def fake_cache(batch=4, h_kv=2, seq_len=64, dtype=torch.bfloat16, d=128):
    return SimpleNamespace(shape=(batch, h_kv, seq_len, d), dtype=dtype, device=torch.device("cuda", 0),
                           b_hbm=batch // 2)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"q": torch.zeros(4, 4, 128, dtype=torch.float16)}, "dtype float16"),
    ({"q": torch.zeros(4, 4, 128, dtype=torch.float32)}, "dtype float32"),
    ({"q": torch.zeros(3, 4, 128, dtype=torch.bfloat16)}, r"shape \(4, num_heads, 128\)"),
    ({"q": torch.zeros(4, 4, 64, dtype=torch.bfloat16)}, "shape"),
    ({"q": torch.zeros(4, 1, 4, 128, dtype=torch.bfloat16)}, "shape"),
    ({"q": torch.zeros(4, 3, 128, dtype=torch.bfloat16)}, "multiple of the cache's 2 KV heads"),
    ({"q": torch.zeros(4, 18, 128, dtype=torch.bfloat16)}, "at most 8"),
    ({"q": torch.zeros(4, 128, 4, dtype=torch.bfloat16).transpose(1, 2)}, "contiguous"),
    ({"lengths": torch.zeros(4, dtype=torch.int64)}, "lengths has dtype int64"),
    ({"lengths": torch.zeros(5, dtype=torch.int32)}, r"lengths must have shape \(4,\)"),
    ({"lengths": [1, 2, 3, 4]}, "lengths must be a torch.Tensor"),
    ({"scale": float("inf")}, "scale"),
    ({"scale": "0.1"}, "scale"),
    ({"out": torch.zeros(4, 4, 128, dtype=torch.float16)}, "out must be"),
    ({}, "must be on a CUDA device"),
])
def test_argument_errors_without_a_gpu(kwargs, match):
    args = {"q": torch.zeros(4, 4, 128, dtype=torch.bfloat16), "lengths": None, "scale": None, "out": None}
    args.update(kwargs)
    with pytest.raises(InvalidArgumentError, match=match):
        att.check_attention_args(args["q"], fake_cache(), args["lengths"], args["scale"], args["out"])


def test_cache_argument_errors_without_a_gpu():
    with pytest.raises(InvalidArgumentError, match="SplitKVCache"):
        att.check_attention_args(torch.zeros(4, 4, 128), object())
    with pytest.raises(InvalidArgumentError, match="head_dim = 64"):
        att.check_attention_args(torch.zeros(4, 4, 64, dtype=torch.bfloat16), fake_cache(d=64))
    k = torch.zeros(2, 2, 16, 128, dtype=torch.bfloat16)
    for kv, match in (((k, k.float()), "dtype float32"), ((k, k[:1]), "same shape"),
                      ((k, k.half()), "same dtype"), ((k[0], k[0]), "4-D"),
                      ((k[..., :64], k[..., :64]), "head_dim = 64"), ((k, None), "torch.Tensor")):
        with pytest.raises(InvalidArgumentError, match=match):
            att.SplitKVCache(*kv, 0.5)  # raised before any GPU is needed
    with pytest.raises(InvalidArgumentError, match="ratio"):
        att.SplitKVCache(k, k, 1.5)
    with pytest.raises(InvalidArgumentError, match="head_dim = 96"):
        att.SplitKVCache.empty(2, 2, 16, torch.bfloat16, 0.5, head_dim=96)
