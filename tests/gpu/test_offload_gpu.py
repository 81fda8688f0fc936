"""The split host/HBM GEMV, pinned memory and the congestion probe on a GPU (skipped without one).

Run these first on the H200: correctness against a float64 reference at r in {0, small, 0.5, 1}
with awkward shapes (N = 1, 7, not a multiple of the tile; K not a multiple of 32), outputs
poisoned with NaN first; the split-K reduction (forced splits) and bitwise determinism;
OffloadedLinear against nn.Linear; CUDA-graph capture; deterministic pinned frees.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from smemkit.errors import InvalidArgumentError
from smemkit.offload import gemv, split_rule
from smemkit.offload.congestion import choose_window, run_congestion_probe
from smemkit.offload.gemv import OffloadedLinear, split_linear
from smemkit.offload.pinned import PinnedBuffer, SplitWeight

pytestmark = pytest.mark.gpu

TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}


def make(n, k, batch, dtype, bias=False, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = (torch.randn(n, k, device="cuda", generator=g) * k ** -0.5).to(dtype)
    x = torch.randn(batch, k, device="cuda", generator=g).to(dtype)
    b = torch.randn(n, device="cuda", generator=g).to(dtype) if bias else None
    return w, x, b


def reference(x, w, b=None):
    ref = x.double() @ w.double().T
    return ref + b.double() if b is not None else ref


def rel_err(got, ref):
    return float((got.double() - ref).norm() / ref.norm().clamp_min(1e-30))


def poisoned(batch, n, dtype):
    return torch.full((batch, n), float("nan"), dtype=dtype, device="cuda")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("n", "k"), [(1, 64), (7, 136), (100, 520), (300, 4096), (1000, 1032)])
@pytest.mark.parametrize("batch", [1, 5, 8, 17, 64])
@pytest.mark.parametrize("ratio", [0.0, 0.05, 0.5, 1.0])
@pytest.mark.parametrize("path", ["auto", "kernel"])
def test_split_linear_matches_float64(dtype, n, k, batch, ratio, path):
    w, x, b = make(n, k, batch, dtype, bias=batch % 2 == 1)
    with SplitWeight(w, ratio) as sw:
        out = poisoned(batch, n, dtype)
        got = split_linear(x, sw, b, out=out, path=path)
        assert got.data_ptr() == out.data_ptr()
        assert torch.isfinite(got).all(), "an output element was not written (still NaN)"
        assert rel_err(got, reference(x, w, b)) < TOL[dtype], sw


@pytest.mark.parametrize("path", ["auto", "kernel", "ring"])
@pytest.mark.parametrize("batch", [1, 8, 64, 70])
def test_all_hbm_weight_runs_cublas_unless_a_path_is_forced(path, batch):
    w, x, b = make(1000, 1032, batch, torch.bfloat16, bias=True)
    with SplitWeight(w, 0.0) as sw:
        assert gemv.linear_path(sw, batch, path) == ("cublas" if path == "auto" else path)
        out = poisoned(batch, 1000, torch.bfloat16)
        got = split_linear(x, sw, b, out=out, path=path)
        assert got.data_ptr() == out.data_ptr() and torch.isfinite(got).all()
        assert rel_err(got, reference(x, w, b)) < TOL[torch.bfloat16]
        if path == "auto":  # exactly the cuBLAS product
            assert torch.equal(got, F.linear(x, w, b))


@pytest.mark.parametrize("ratio", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("batch", [3, 20])
def test_inf_and_nan_inputs_propagate_as_in_float64(ratio, batch):
    """x row 0 holds +inf at k = 3 (every weight of column 3 positive: every output +inf), row 1 a
    NaN at k = 70; K = 200 leaves a partial last k-chunk, whose stale stage bytes (earlier chunks'
    x, incl. the inf) must not leak into the finite rows or turn +inf into NaN."""
    n, k = 300, 200
    w, x, b = make(n, k, batch, torch.bfloat16)
    w[:, 3] = w[:, 3].abs() + 0.125
    x[0, 3] = float("inf")
    x[1, 70] = float("nan")
    ref = reference(x, w)
    with SplitWeight(w, ratio) as sw:
        got = split_linear(x, sw, out=poisoned(batch, n, torch.bfloat16), path="kernel").double()
    assert torch.isposinf(got[0]).all() and torch.isposinf(ref[0]).all()
    assert torch.isnan(got[1]).all() and torch.isnan(ref[1]).all()
    assert torch.isfinite(got[2:]).all()
    assert rel_err(got[2:], ref[2:]) < TOL[torch.bfloat16]


@pytest.mark.parametrize(("split_g", "split_h"), [(1, 1), (2, 3), (7, 5), (64, 16)])
def test_forced_k_splits_reduce_correctly_and_leave_counters_zero(split_g, split_h):
    w, x, b = make(1000, 2056, 24, torch.bfloat16, bias=True)
    ref = reference(x, w, b)
    with SplitWeight(w, 0.3) as sw:
        outs = []
        for _ in range(3):
            out = poisoned(24, 1000, torch.bfloat16)
            outs.append(split_linear(x, sw, b, out=out, split_g=split_g, split_h=split_h, host_ctas=5))
        torch.cuda.synchronize()
        for o in outs:
            assert torch.isfinite(o).all() and rel_err(o, ref) < TOL[torch.bfloat16]
            assert torch.equal(o, outs[0])  # bitwise: the partials are summed in split order
        scratch = gemv.default_scratch(torch.cuda.current_device())
        if scratch.counters is not None:
            assert int(scratch.counters.abs().sum()) == 0


@pytest.mark.parametrize("host_ctas", [1, 3, 16, 200])
@pytest.mark.parametrize("window", [8192, 32768])
def test_any_congestion_window_gives_the_same_answer(host_ctas, window):
    w, x, _ = make(777, 1024, 8, torch.bfloat16)
    with SplitWeight(w, 0.6) as sw:
        out = poisoned(8, 777, torch.bfloat16)
        got = split_linear(x, sw, host_ctas=host_ctas, host_window=window, out=out, path="kernel")
        assert rel_err(got, reference(x, w)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("host_stage", [0, 1, 2, 3])
@pytest.mark.parametrize("host_window", [8192, 16384, 24576, 32768])
@pytest.mark.parametrize(("n", "k", "batch"), [(7, 72, 3), (203, 1000, 40)])
def test_both_host_read_paths(host_stage, host_window, n, k, batch):
    w, x, b = make(n, k, batch, torch.bfloat16, bias=True)
    with SplitWeight(w, 1.0) as sw:  # every row on the host
        got = split_linear(x, sw, b, host_stage=host_stage, host_window=host_window, host_ctas=4,
                           out=poisoned(batch, n, torch.bfloat16))
        assert rel_err(got, reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("host_stage", [0, 1, 2, 3])
def test_every_planned_launch_fits_the_driver(host_stage):
    """Static + dynamic shared memory just above 48 KB with dynamic <= 48 KB (nt1 + a 32 KB window,
    nt8 + 8-16 KB) gets occupancy 0 unless the dynamic-size attribute is raised below 48 KB too
    (three such launches failed on the H200: commit cb352a7). Every plan the planner makes must
    get slots from the driver."""
    from smemkit.runtime.device import gpu_info

    sms = gpu_info(0).sm_count
    for batch in (1, 9, 17, 40, 64):
        for host_steps in range(1, gemv.HOST_STEPS_MAX + 1):
            for n_hbm in (0, 512, 1024):
                plan = gemv.plan_for(1024, 4096, batch, n_hbm, torch.bfloat16, 0, host_ctas=4,
                                     host_steps=host_steps, host_stage=host_stage)
                # the CTAs per SM the kernel is built for (__launch_bounds__) fit at the default depth
                assert plan.slots >= gemv.MIN_CTAS_PER_SM[plan.nt] * sms and plan.grid >= 1, plan


@pytest.mark.parametrize("host_load", [1, 2])
@pytest.mark.parametrize(("n", "k", "batch"), [(7, 72, 3), (203, 1000, 40)])
def test_register_host_read_experiments(host_load, n, k, batch):
    w, x, b = make(n, k, batch, torch.bfloat16, bias=True)
    with SplitWeight(w, 0.5) as sw:
        got = split_linear(x, sw, b, host_load=host_load, host_window=16384, host_ctas=3,
                           out=poisoned(batch, n, torch.bfloat16))
        assert rel_err(got, reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.parametrize("hbm_depth", [1, 2, 3, 5])
@pytest.mark.parametrize("ctas_per_sm", [None, 1])
@pytest.mark.parametrize(("n", "k", "batch"), [(300, 4096, 1), (1000, 1032, 17), (999, 2056, 64)])
def test_pipeline_depths_and_ctas_per_sm(hbm_depth, ctas_per_sm, n, k, batch):
    w, x, b = make(n, k, batch, torch.bfloat16, bias=True)
    nt = gemv.batch_tiles(batch)
    if hbm_depth > gemv.max_hbm_depth(nt):
        pytest.skip("ring does not fit shared memory at this batch")
    with SplitWeight(w, 0.25) as sw:
        got = split_linear(x, sw, b, hbm_depth=hbm_depth, ctas_per_sm=ctas_per_sm,
                           out=poisoned(batch, n, torch.bfloat16))
        assert torch.isfinite(got).all()
        assert rel_err(got, reference(x, w, b)) < TOL[torch.bfloat16]


@pytest.mark.parametrize(("n", "batch"), [(999, 64), (1000, 64), (999, 5)])
def test_split_k_reduction_scalar_and_vector_paths(n, batch):
    """N % 4 != 0 takes the scalar reduction, N % 4 == 0 the float4 one; both sum in split order."""
    w, x, b = make(n, 3000, batch, torch.bfloat16, bias=True)
    ref = reference(x, w, b)
    with SplitWeight(w, 0.4) as sw:
        outs = [split_linear(x, sw, b, split_g=6, split_h=5, host_ctas=4,
                             out=poisoned(batch, n, torch.bfloat16)) for _ in range(3)]
        torch.cuda.synchronize()
        for o in outs:
            assert rel_err(o, ref) < TOL[torch.bfloat16] and torch.equal(o, outs[0])


@pytest.mark.parametrize("ratio", [0.0, 0.013, 0.25, 1.0])
def test_bitwise_deterministic_at_a_decode_shape(ratio):
    w, x, _ = make(4096, 4096, 8, torch.bfloat16)
    with SplitWeight(w, ratio) as sw:
        first = split_linear(x, sw, path="kernel")
        for _ in range(4):
            assert torch.equal(split_linear(x, sw, path="kernel"), first)
        assert rel_err(first, reference(x, w)) < TOL[torch.bfloat16]


def test_leading_dims_chunking_and_empty_input():
    w, _, b = make(96, 256, 1, torch.float16, bias=True)
    x = torch.randn(3, 50, 256, device="cuda").half()  # 150 rows: the large-batch path
    with SplitWeight(w, 0.5) as sw:
        got = split_linear(x, sw, b)
        assert got.shape == (3, 50, 96)
        assert rel_err(got.reshape(-1, 96), reference(x.reshape(-1, 256), w, b)) < TOL[torch.float16]
        chunked = split_linear(x, sw, b, path="kernel")  # three launches of <= 64 rows
        assert rel_err(chunked.reshape(-1, 96), reference(x.reshape(-1, 256), w, b)) < TOL[torch.float16]
        empty = split_linear(torch.empty(0, 256, device="cuda", dtype=torch.float16), sw)
        assert empty.shape == (0, 96)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("n", "k"), [(7, 136), (1000, 1032), (8192, 4096)])  # 8192 x 4096, r = 1: 4 chunks
@pytest.mark.parametrize("batch", [1, 5, 64, 65, 200, 512])
@pytest.mark.parametrize("ratio", [0.03, 0.5, 0.75, 1.0])
def test_ring_path_matches_float64(dtype, n, k, batch, ratio):
    from smemkit.offload.ring_gemm import RING_SLOT_BYTES, host_chunks

    w, x, b = make(n, k, batch, dtype, bias=batch % 2 == 1)
    with SplitWeight(w, ratio) as sw:
        chunks, _ = host_chunks(sw.host_rows, k, 2)
        # slots reused at 8192 x 4096, r >= 0.75
        assert (chunks > 2) is (sw.host_rows * k * 2 > 2 * RING_SLOT_BYTES)
        outs = []
        for _ in range(2):
            out = poisoned(batch, n, dtype)
            outs.append(split_linear(x, sw, b, out=out, path="ring"))
            assert outs[-1].data_ptr() == out.data_ptr()
        row_bytes = k * 2
        expected = ("cublas" if not sw.host_rows else "ring" if batch > split_rule.KERNEL_MAX_ROWS
                    else split_rule.auto_path(batch, sw.n_hbm * row_bytes, sw.host_rows * row_bytes,
                                        *gemv._link_rates(torch.cuda.current_device())))
        assert gemv.linear_path(sw, batch) == expected
        torch.cuda.synchronize()
        assert torch.isfinite(outs[0]).all(), "an output column was not written (still NaN)"
        assert rel_err(outs[0], reference(x, w, b)) < TOL[dtype], sw
        assert torch.equal(outs[0], outs[1])  # fixed GEMM shapes, disjoint output columns: bitwise


def test_ring_path_on_two_streams_at_once():
    """Each calling stream has its own ring: interleaved calls on two streams never read each
    other's slots."""
    ws = [make(8192, 2048, 96, torch.bfloat16, seed=s)[0] for s in (1, 2)]
    x = torch.randn(96, 2048, device="cuda", dtype=torch.bfloat16)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    with SplitWeight(ws[0], 0.75) as a, SplitWeight(ws[1], 0.75) as b:  # 24 MB host: 2 chunks each
        outs = {0: [], 1: []}
        for _ in range(4):
            for i, (sw, stream) in enumerate(zip((a, b), streams, strict=True)):
                stream.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(stream):
                    outs[i].append(split_linear(x, sw, path="ring"))
        torch.cuda.synchronize()
        for i in (0, 1):
            ref = reference(x, ws[i])
            for o in outs[i]:
                assert rel_err(o, ref) < TOL[torch.bfloat16] and torch.equal(o, outs[i][0])


def test_ring_waits_for_a_slow_gemm_stream_before_reusing_slots():
    """A long sleep queued on the ring's GEMM stream delays every chunk GEMM: the copies must wait
    for them before refilling a slot (chunk j + 2 after chunk j's GEMM, within a call) and before
    the next call's first copies (across calls), or the GEMMs would read the wrong rows."""
    from smemkit.offload.ring_gemm import host_chunks, host_ring

    dtype = torch.bfloat16
    ws = [make(16384, 2048, 96, dtype, seed=s)[0] for s in (3, 4)]
    x = torch.randn(96, 2048, device="cuda", dtype=dtype)
    ring = host_ring(x.device, dtype)
    with SplitWeight(ws[0], 0.75) as a, SplitWeight(ws[1], 0.75) as b:
        assert host_chunks(a.host_rows, 2048, 2)[0] == 3 and a.n_hbm > 0  # slot 0 refilled
        with torch.cuda.stream(ring.gemms):
            torch.cuda._sleep(50_000_000)  # ~25 ms at 1.98 GHz: far longer than any copy here
        got_a = split_linear(x, a, path="ring")
        with torch.cuda.stream(ring.gemms):
            torch.cuda._sleep(50_000_000)
        got_b = split_linear(x, b, path="ring")  # back to back: its copies reuse a's slots
        torch.cuda.synchronize()
        assert rel_err(got_a, reference(x, ws[0])) < TOL[dtype]
        assert rel_err(got_b, reference(x, ws[1])) < TOL[dtype]


def test_free_rings_releases_the_slots():
    from smemkit.offload.ring_gemm import RING_SLOT_BYTES, free_rings

    w, x, _ = make(1024, 2048, 96, torch.bfloat16)
    with SplitWeight(w, 0.5) as sw:
        first = split_linear(x, sw, path="ring")
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        assert free_rings() >= 1
        assert torch.cuda.memory_allocated() <= before - 2 * RING_SLOT_BYTES
        assert torch.equal(split_linear(x, sw, path="ring"), first)  # allocated again on demand


def check_in_a_cuda_graph(lin, ratio, rows, max_batch=64):
    """Build an OffloadedLinear, capture its forward on ``rows`` inputs (after warm-up on a side
    stream), replay it on fresh inputs: equal to eager, close to float64."""
    dtype = lin.weight.dtype
    mod = OffloadedLinear.from_linear(lin, ratio, max_batch=max_batch)
    try:
        static_x = torch.randn(rows, lin.in_features, device="cuda", dtype=dtype)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                mod(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = mod(static_x)
        for seed in range(3):
            fresh = torch.randn(rows, lin.in_features, generator=torch.Generator().manual_seed(seed))
            static_x.copy_(fresh.to(dtype))
            graph.replay()
            torch.cuda.synchronize()
            assert torch.equal(static_y, mod(static_x))
            assert rel_err(static_y, reference(static_x, lin.weight, lin.bias)) < TOL[dtype]
    finally:
        mod.free()


def test_large_batch_ring_path_in_a_cuda_graph():
    torch.manual_seed(2)
    from smemkit.offload.pinned import host_rows_for_ratio
    from smemkit.offload.ring_gemm import host_chunks

    lin = nn.Linear(2048, 16384, bias=True).to("cuda", torch.bfloat16)
    assert host_chunks(host_rows_for_ratio(16384, 0.75), 2048, 2)[0] == 3  # 48 MiB: a slot refilled
    check_in_a_cuda_graph(lin, 0.75, 300, max_batch=300)


def test_argument_errors_on_the_gpu():
    w, x, b = make(64, 128, 4, torch.bfloat16, bias=True)
    with SplitWeight(w, 0.5) as sw:
        with pytest.raises(InvalidArgumentError, match="dtype float16"):
            split_linear(x.half(), sw)
        with pytest.raises(InvalidArgumentError, match="contiguous"):
            split_linear(torch.randn(128, 4, device="cuda").to(torch.bfloat16).T, sw)
        with pytest.raises(InvalidArgumentError, match="bias must have shape"):
            split_linear(x, sw, b[:10])
        with pytest.raises(InvalidArgumentError, match="host_window"):
            split_linear(x, sw, host_window=1000)
        with pytest.raises(InvalidArgumentError, match="host_ctas"):
            split_linear(x, sw, host_ctas=0)
        with pytest.raises(InvalidArgumentError, match="hbm_depth"):
            split_linear(x, sw, hbm_depth=gemv.HBM_DEPTH_MAX + 1)
        with pytest.raises(InvalidArgumentError, match="ctas_per_sm"):
            split_linear(x, sw, ctas_per_sm=0)
        x64 = torch.randn(64, 128, device="cuda").to(torch.bfloat16)
        with pytest.raises(InvalidArgumentError,
                           match=rf"hbm_depth = {gemv.HBM_DEPTH_MAX}( with host_window = \d+)? needs"):
            split_linear(x64, sw, hbm_depth=gemv.HBM_DEPTH_MAX)  # a valid depth whose ring cannot fit
        with pytest.raises(InvalidArgumentError, match="path='ring' does not run it"):
            split_linear(x, sw, split_g=2, path="ring")
        with pytest.raises(InvalidArgumentError, match="path='gemm'; allowed"):
            split_linear(x, sw, split_g=2, path="gemm")
        with pytest.raises(InvalidArgumentError, match="host_load"):
            split_linear(x, sw, host_load=3)
    with pytest.raises(InvalidArgumentError, match="freed"):
        split_linear(x, sw)


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("ratio", [0.0, 0.1, 1.0])
def test_offloaded_linear_equals_nn_linear(bias, ratio):
    torch.manual_seed(0)
    lin = nn.Linear(1024, 700, bias=bias).to("cuda", torch.bfloat16)
    mod = OffloadedLinear.from_linear(lin, ratio)
    try:
        x = torch.randn(2, 5, 1024, device="cuda", dtype=torch.bfloat16)
        ref = reference(x.reshape(-1, 1024), lin.weight, lin.bias).reshape(2, 5, 700)
        ours, theirs = mod(x), lin(x)
        assert ours.shape == theirs.shape
        assert rel_err(ours, ref) <= 2 * rel_err(theirs, ref) + 2e-3
        assert abs(mod.ratio - ratio) <= 16 / 700
        assert "ratio=" in repr(mod)
    finally:
        mod.free()


def test_offloaded_linear_in_a_cuda_graph():
    torch.manual_seed(1)
    lin = nn.Linear(2048, 1500).to("cuda", torch.float16)
    check_in_a_cuda_graph(lin, 0.25, 8)


def _host_alloc_alive(ptr: int) -> bool:
    from cuda.bindings import driver

    err, _flags = driver.cuMemHostGetFlags(ptr)
    return int(err) == 0


def test_pinned_free_is_deterministic():
    buf = PinnedBuffer((1 << 20) + 12)  # an odd size: allocated exactly, no power-of-two rounding
    ptr = buf.host_ptr
    t = buf.tensor(torch.uint8)
    assert t.is_pinned() and t.numel() == (1 << 20) + 12
    t.fill_(7)
    dev = t.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    assert int(dev.sum()) == 7 * t.numel()
    assert _host_alloc_alive(ptr)
    buf.free()
    assert buf.freed and not _host_alloc_alive(ptr)
    buf.free()  # idempotent
    with pytest.raises(InvalidArgumentError, match="freed"):
        buf.tensor()
    with PinnedBuffer(4096) as other:
        p2 = other.host_ptr
        assert _host_alloc_alive(p2)
    assert not _host_alloc_alive(p2)


def test_split_weight_parts_and_free():
    w, _, _ = make(300, 64, 1, torch.bfloat16)
    sw = SplitWeight(w, 0.5)
    # 150 rows asked; the HBM part must be a multiple of 16: 144 (156 host rows) is nearest
    assert (sw.n_hbm, sw.host_rows) == (144, 156) and sw.hbm.is_cuda and sw.host.is_pinned()
    assert sw.ratio == 156 / 300 and sw.requested_ratio == 0.5
    assert torch.equal(sw.to_dense(), w)
    assert torch.equal(sw.host, w[144:].cpu()) and torch.equal(sw.hbm, w[:144])
    ptr = sw._buffer.host_ptr
    sw.free()
    assert sw.freed and not _host_alloc_alive(ptr)


def test_host_cuda_view_reads_the_pinned_rows_in_place():
    w, x, _ = make(256, 512, 4, torch.bfloat16)
    with SplitWeight(w, 0.5) as sw:
        try:
            view = sw.host_cuda_view()
        except Exception as exc:  # torch may refuse a host pointer as CUDA memory
            pytest.skip(f"torch refused the aliasing tensor: {exc}")
        assert view.is_cuda and view.shape == (sw.host_rows, 512)
        assert torch.equal(view, w[sw.n_hbm:])
        assert rel_err(F.linear(x, view), reference(x, w[sw.n_hbm:])) < TOL[torch.bfloat16]
        del view


def test_congestion_probe_smoke():
    result = run_congestion_probe(host_values=(1, 8), windows=(4096, 16384), reps=1, host_mib=16, hbm_mib=256)
    assert len(result["points"]) == 4
    for p in result["points"]:
        assert p["host_gbps"] > 0.5 and p["host_alone_gbps"] > 0.5
        assert p["hbm_tbps"] > 0.1 and p["hbm_alone_tbps"] > 0.1
    assert result["choice"]["host_ctas"] in (1, 8)
    assert result["profile_field"]["split_gemv_window_bytes"] in (8192, 16384)
    assert choose_window  # the choice above came from it
