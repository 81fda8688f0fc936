"""DAK's direct-access GEMM of the host rows (smemkit.offload.direct_gemm) on a GPU (skipped without
one): float64 reference on awkward shapes (M = 1, odd, not a multiple of 128; host rows not a
multiple of 64 or 16; K not a multiple of 64), outputs poisoned with NaN first, bias, rows of zeros,
inf and NaN, bitwise repeats, every cluster size, forced k-splits, CUDA-graph replay on new input
values, and clear errors for a capture that would have to grow the scratch or make a weight's
tensor maps, and for a plan made for another shape."""

import pytest
import torch

from smemkit.errors import InvalidArgumentError
from smemkit.offload import direct_gemm as dg
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight

pytestmark = pytest.mark.gpu

TOL = {torch.bfloat16: 1e-2, torch.float16: 2e-3}


def make(m, n, k, dtype, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    w = (torch.randn(n, k, device="cuda", generator=g) * k ** -0.5).to(dtype)
    x = torch.randn(m, k, device="cuda", generator=g).to(dtype)
    b = torch.randn(n, device="cuda", generator=g).to(dtype)
    return w, x, b


def compare(got, ref, dtype):
    """Non-finite outputs where float64 has them; the finite ones within the tolerance."""
    got = got.double()
    assert torch.equal(torch.isnan(got), torch.isnan(ref))
    assert torch.equal(torch.isinf(got), torch.isinf(ref))
    fin = torch.isfinite(ref)
    err = float((got[fin] - ref[fin]).norm() / ref[fin].norm().clamp_min(1e-30))
    assert err < TOL[dtype], err


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("m", "n", "k", "ratio"), [
    (1, 64, 64, 1.0), (7, 100, 136, 0.5), (130, 300, 200, 0.4), (257, 48, 8200, 1.0),
    (512, 100, 512, 0.6), (600, 520, 1032, 0.3), (512, 3000, 256, 0.9)])
def test_direct_path_matches_float64_with_special_rows(dtype, m, n, k, ratio):
    w, x, b = make(m, n, k, dtype)
    if m >= 3:
        x[0] = 0
        x[1, k // 2] = float("inf")
        x[2, 0] = float("nan")
    ref = x.double() @ w.double().T + b.double()
    with SplitWeight(w, ratio) as sw:
        outs = []
        for _ in range(2):
            out = torch.full((m, n), float("nan"), dtype=dtype, device="cuda")
            outs.append(split_linear(x, sw, b, out=out, path="direct"))
        torch.cuda.synchronize()
    compare(outs[0], ref, dtype)
    assert torch.equal(outs[0].view(torch.int16), outs[1].view(torch.int16))  # bitwise repeat


@pytest.mark.parametrize("P", [1, 2, 4])
@pytest.mark.parametrize("split", [1, 3, 16])
def test_every_cluster_size_and_k_split(P, split):
    m, n, k = 384, 700, 1088
    w, x, b = make(m, n, k, torch.bfloat16, seed=P + split)
    ref = x.double() @ w.double().T + b.double()
    with SplitWeight(w, 0.5) as sw:
        plan = dg.plan_direct(m, sw.host_rows, k, P=P, split=split, streams=3, stages=3)
        out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        dg.direct_linear(x, sw, b, out, plan)
        torch.cuda.synchronize()
    compare(out, ref, torch.bfloat16)
    counters = dg.device_scratch(x.device).split.counters
    if split > 1:
        assert counters is not None and int(counters.abs().sum()) == 0  # the last CTA resets each


def test_direct_path_replays_in_a_cuda_graph_on_new_inputs():
    m, n, k = 512, 1024, 2048
    w, x, b = make(m, n, k, torch.bfloat16)
    with SplitWeight(w, 0.25) as sw:
        out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
        split_linear(x, sw, b, out=out, path="direct")  # kernel, maps and scratch made outside
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            split_linear(x, sw, b, out=out, path="direct")
        x.copy_(torch.randn_like(x))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        eager = split_linear(x, sw, b, path="direct")
        torch.cuda.synchronize()
        n_hbm = sw.n_hbm
    # the direct kernel's columns bitwise (its sums have a fixed order); cuBLAS's to the reference
    assert torch.equal(out[:, n_hbm:], eager[:, n_hbm:])
    compare(out, x.double() @ w.double().T + b.double(), torch.bfloat16)


def test_a_capture_that_would_grow_the_scratch_is_refused():
    m, n, k = 1024, 2048, 8192  # 8 tiles x split 3: a larger workspace than the tests above need
    w, x, _ = make(m, n, k, torch.bfloat16, seed=7)
    with SplitWeight(w, 0.5) as sw:
        plan = dg.plan_direct(m, sw.host_rows, k, streams=12)
        need = plan.ws_floats(m, sw.host_rows)
        have = dg.device_scratch(x.device).split.ws
        if have is not None and have.numel() >= need:
            pytest.skip("this process's scratch is already large enough")
        out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
        graph = torch.cuda.CUDAGraph()
        with pytest.raises(InvalidArgumentError, match="outside the capture"), torch.cuda.graph(graph):
            dg.direct_linear(x, sw, None, out, plan)


def test_a_plan_for_another_shape_is_refused():
    w, x, _ = make(256, 300, 1024, torch.bfloat16)
    with SplitWeight(w, 0.5) as sw:
        wrong = dg.plan_direct(256, sw.host_rows + 128, 1024)
        with pytest.raises(InvalidArgumentError, match="does not fit"):
            dg.direct_linear(x, sw, None, torch.empty((256, 300), dtype=torch.bfloat16, device="cuda"), wrong)


def test_a_capture_before_the_weights_maps_exist_is_refused():
    m, n, k = 256, 512, 1024
    w, x, _ = make(m, n, k, torch.bfloat16, seed=11)
    out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
    with SplitWeight(w, 0.5) as warm, SplitWeight(w.clone(), 0.5) as fresh:  # two host parts at once
        dg.direct_linear(x, warm, None, out)  # kernel and scratch made, warm's maps too
        torch.cuda.synchronize()
        # an earlier test's host part may have had this address: forget its maps (they hold only the
        # address and the shape, so dropping them from the cache changes nothing else)
        dg._MAPS.pop((x.device.index, fresh.host_ptr, fresh.host_rows, k, fresh.dtype), None)
        graph = torch.cuda.CUDAGraph()
        with pytest.raises(InvalidArgumentError, match="not made yet"), torch.cuda.graph(graph):
            dg.direct_linear(x, fresh, None, out)
