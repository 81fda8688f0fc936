"""The split decode attention on a GPU (skipped without one).

Against a float64 reference (relative norm error, outputs poisoned with NaN first) at r in
{0, 0.5, 1} with awkward lengths (0, 1, 7, 1000, L) and L not a multiple of the chunk; GQA group
sizes 1-8; B = 1; forced context splits (the chunk merge) with counters left zero; any congestion
window; bitwise determinism; CUDA-graph capture; argument errors; the cache's parts and free.
"""

import pytest
import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload import attention as att
from smemkit.offload.attention import SplitKVCache, reference_attention, split_decode_attention

pytestmark = pytest.mark.gpu

TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}


def make(batch, h_kv, group, seq_len, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(batch, h_kv * group, 128, device="cuda", generator=g).to(dtype)
    k = torch.randn(batch, h_kv, seq_len, 128, device="cuda", generator=g).to(dtype)
    v = torch.randn(batch, h_kv, seq_len, 128, device="cuda", generator=g).to(dtype)
    return q, k, v


def rel_err(got, ref):
    return float((got.double() - ref).norm() / ref.norm().clamp_min(1e-30))


def poisoned(like):
    return torch.full_like(like, float("nan"))


def lengths_for(batch, seq_len, pattern):
    if pattern == "full":
        vals = [seq_len] * batch
    else:
        awkward = [1, 7, min(1000, seq_len), seq_len, max(1, seq_len - 1)]
        vals = [awkward[i % len(awkward)] for i in range(batch)]
    return torch.tensor(vals, dtype=torch.int32, device="cuda")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("batch", "h_kv", "group", "seq_len"),
                         [(1, 1, 1, 1), (1, 8, 4, 1000), (3, 2, 8, 77), (5, 4, 2, 1030), (8, 2, 7, 2048),
                          (6, 1, 3, 4100)])
@pytest.mark.parametrize("ratio", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("pattern", ["full", "awkward"])
def test_split_attention_matches_float64(dtype, batch, h_kv, group, seq_len, ratio, pattern):
    q, k, v = make(batch, h_kv, group, seq_len, dtype)
    lengths = lengths_for(batch, seq_len, pattern)
    ref = reference_attention(q, k, v, lengths)
    with SplitKVCache(k, v, ratio) as cache:
        out = poisoned(q)
        got = split_decode_attention(q, cache, lengths, out=out)
        assert got.data_ptr() == out.data_ptr()
        assert torch.isfinite(got).all(), f"an output element was not written (still NaN): {cache}"
        assert rel_err(got, ref) < TOL[dtype], cache
        if pattern == "full":  # lengths=None means every sequence has L tokens
            assert torch.equal(split_decode_attention(q, cache, force_kernel=True), got)


@pytest.mark.parametrize("force_kernel", [False, True])
@pytest.mark.parametrize(("batch", "h_kv", "group", "seq_len"),
                         [(1, 1, 1, 1), (3, 2, 8, 77), (8, 8, 4, 4100)])
def test_all_hbm_cache_without_lengths_runs_sdpa_unless_the_kernel_is_forced(force_kernel, batch, h_kv,
                                                                             group, seq_len):
    from smemkit.offload.attention import uses_sdpa

    q, k, v = make(batch, h_kv, group, seq_len, torch.bfloat16)
    with SplitKVCache(k, v, 0.0) as cache:
        assert uses_sdpa(cache, None, force_kernel) is not force_kernel
        assert not uses_sdpa(cache, lengths_for(batch, seq_len, "full"))
        out = poisoned(q)
        got = split_decode_attention(q, cache, out=out, scale=0.05, force_kernel=force_kernel)
        assert got.data_ptr() == out.data_ptr() and torch.isfinite(got).all()
        assert rel_err(got, reference_attention(q, k, v, scale=0.05)) < TOL[torch.bfloat16]


def test_zero_length_gives_zero_and_scale_is_used():
    q, k, v = make(4, 2, 4, 300, torch.bfloat16)
    lengths = torch.tensor([0, 300, 5, 0], dtype=torch.int32, device="cuda")
    with SplitKVCache(k, v, 0.5) as cache:
        got = split_decode_attention(q, cache, lengths, scale=0.02, out=poisoned(q))
        assert torch.equal(got[0], torch.zeros_like(got[0])) and torch.equal(got[3], torch.zeros_like(got[3]))
        ref = reference_attention(q, k, v, lengths, scale=0.02)
        assert rel_err(got[1:3], ref[1:3]) < TOL[torch.bfloat16]


@pytest.mark.parametrize(("chunks_g", "chunks_h"), [(1, 1), (2, 3), (7, 5), (1000, 1000)])
def test_forced_context_splits_merge_correctly_and_leave_counters_zero(chunks_g, chunks_h):
    q, k, v = make(6, 2, 4, 3000, torch.bfloat16)
    lengths = lengths_for(6, 3000, "awkward")
    ref = reference_attention(q, k, v, lengths)
    with SplitKVCache(k, v, 0.5) as cache:
        outs = [split_decode_attention(q, cache, lengths, chunks_g=chunks_g, chunks_h=chunks_h, host_ctas=3,
                                       out=poisoned(q)) for _ in range(3)]
        torch.cuda.synchronize()
        for o in outs:
            assert torch.isfinite(o).all() and rel_err(o, ref) < TOL[torch.bfloat16]
            assert torch.equal(o, outs[0])  # bitwise: chunks are merged in order
        scratch = att.default_scratch(torch.cuda.current_device())
        if scratch.counters is not None:
            assert int(scratch.counters.abs().sum()) == 0


@pytest.mark.parametrize("host_ctas", [1, 3, 16, 500])
@pytest.mark.parametrize("window", [8192, 16384, 32768])
def test_any_congestion_window_gives_the_same_answer(host_ctas, window):
    q, k, v = make(5, 2, 4, 777, torch.bfloat16)
    with SplitKVCache(k, v, 0.6) as cache:
        got = split_decode_attention(q, cache, host_ctas=host_ctas, host_window=window, out=poisoned(q))
        assert rel_err(got, reference_attention(q, k, v)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("ratio", [0.0, 0.125, 0.5, 1.0])
def test_bitwise_deterministic_at_a_decode_shape(ratio):
    q, k, v = make(8, 8, 4, 4096, torch.bfloat16)
    with SplitKVCache(k, v, ratio) as cache:
        first = split_decode_attention(q, cache)
        for _ in range(4):
            assert torch.equal(split_decode_attention(q, cache), first)
        assert rel_err(first, reference_attention(q, k, v)) < TOL[torch.bfloat16]


def test_in_a_cuda_graph():
    q, k, v = make(4, 8, 4, 2000, torch.float16)
    lengths = torch.tensor([2000, 1, 999, 1500], dtype=torch.int32, device="cuda")
    with SplitKVCache(k, v, 0.5) as cache:
        cache.prepare(q.shape[1])
        static_q = q.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                split_decode_attention(static_q, cache, lengths)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = split_decode_attention(static_q, cache, lengths)
        for seed in range(3):
            static_q.copy_(torch.randn(q.shape, generator=torch.Generator().manual_seed(seed)).half())
            lengths.copy_(torch.tensor([1 + 500 * seed, 2000, 7, 1000], dtype=torch.int32))
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(static_out, split_decode_attention(static_q, cache, lengths))
            assert rel_err(static_out, reference_attention(static_q, k, v, lengths)) < TOL[torch.float16]


def test_argument_errors_on_the_gpu():
    q, k, v = make(4, 2, 4, 64, torch.bfloat16)
    with SplitKVCache(k, v, 0.5) as cache:
        with pytest.raises(InvalidArgumentError, match="dtype float16"):
            split_decode_attention(q.half(), cache)
        with pytest.raises(InvalidArgumentError, match="contiguous"):
            split_decode_attention(q.transpose(0, 1).contiguous().transpose(0, 1), cache)
        with pytest.raises(InvalidArgumentError, match="CUDA device"):
            split_decode_attention(q.cpu(), cache)
        with pytest.raises(InvalidArgumentError, match="lengths has dtype int64"):
            split_decode_attention(q, cache, torch.zeros(4, dtype=torch.int64, device="cuda"))
        with pytest.raises(InvalidArgumentError, match="host_window"):
            split_decode_attention(q, cache, host_window=1000)
        with pytest.raises(InvalidArgumentError, match="host_ctas"):
            split_decode_attention(q, cache, host_ctas=0)
    with pytest.raises(InvalidArgumentError, match="freed"):
        split_decode_attention(q, cache)
    with pytest.raises(InvalidArgumentError, match="head_dim = 64"):
        SplitKVCache(k[..., :64], v[..., :64], 0.5)


def test_cache_parts_views_and_free():
    _, k, v = make(5, 2, 1, 40, torch.bfloat16)
    cache = SplitKVCache(k, v, 0.5)  # 2.5 sequences asked: 2 go to the host (ties to fewer)
    assert (cache.b_hbm, cache.host_seqs) == (3, 2) and cache.ratio == 0.4
    assert cache.k_hbm.is_cuda and cache.k_host.is_pinned() and cache.v_host.is_pinned()
    kd, vd = cache.to_dense()
    assert torch.equal(kd, k) and torch.equal(vd, v)
    try:
        kh, vh = cache.host_cuda_views()
        assert torch.equal(kh, k[3:]) and torch.equal(vh, v[3:])
        del kh, vh
    except Exception as exc:  # torch may refuse a host pointer as CUDA memory
        print(f"host_cuda_views refused: {exc}")
    assert cache.v_host_ptr - cache.k_host_ptr == 2 * 2 * 40 * 128 * 2
    cache.free()
    assert cache.freed
    cache.free()  # idempotent
    empty = SplitKVCache.empty(3, 2, 64, torch.float16, 1.0)
    assert empty.b_hbm == 0 and empty.k_host.shape == (3, 2, 64, 128)
    empty.free()
    all_hbm = SplitKVCache(k, v, 0.0)  # no host sequences: its pinned buffer is empty
    all_hbm.free()
    assert all_hbm.freed  # so a later call is refused instead of reading freed HBM tensors
    with pytest.raises(InvalidArgumentError, match="freed"):
        split_decode_attention(torch.zeros(5, 2, 128, dtype=torch.bfloat16, device="cuda"), all_hbm)
