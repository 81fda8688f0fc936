"""The routed-expert GEMV (``moe_gemv``) and ``OffloadedExperts`` on a GPU (skipped without one).

Every pair's output against a float64 reference by relative norm error, within 2x of the error of
PyTorch's own bf16/fp16 ``F.linear`` on the same inputs (plus one rounding of the output), at
awkward shapes: one output row, odd rows, K not a multiple of a warp's 256-element stride, one
pair, more pairs on an expert than the kernel's chunk of 8, every expert in HBM, in host memory,
or split. Outputs are poisoned with NaN first; a pair with no valid expert leaves its row alone;
rows of zeros give zeros, inf and NaN inputs give non-finite outputs where the reference does;
the same inputs give bitwise the same outputs. Then the experts module: kernel path against its
own per-expert loop, and capture in a CUDA graph.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from smemkit.offload import PinnedBuffer
from smemkit.offload.experts import OffloadedExperts
from smemkit.offload.moe_gemv import MAX_PAIRS, expert_gemv, expert_pointers

pytestmark = pytest.mark.gpu


def rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.double() - want).norm() / want.norm().clamp_min(1e-300))


class Experts:
    """E random (n, k) matrices, the first ``n_hbm`` in HBM, the rest in pinned memory."""

    def __init__(self, e: int, n: int, k: int, n_hbm: int, dtype: torch.dtype, seed: int = 0) -> None:
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.dense = torch.randn(e, n, k, device="cuda", generator=g).to(dtype)
        self.hbm = self.dense[:n_hbm].clone()
        self.buffer = self.view = None
        if n_hbm < e:
            host = self.dense[n_hbm:]
            self.buffer = PinnedBuffer(host.numel() * host.element_size())
            self.host = self.buffer.tensor(dtype, tuple(host.shape))
            self.host.copy_(host.cpu())
            self.view = self.buffer.cuda_view(dtype, tuple(host.shape))
        self.ptrs = expert_pointers(self.hbm, self.view)
        self.e, self.n, self.n_hbm = e, n, n_hbm

    def free(self) -> None:
        if self.buffer is not None:
            self.buffer.free()


def pairs_of(p: int, e: int, seed: int) -> torch.Tensor:
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(0, e, (p,), device="cuda", generator=g, dtype=torch.int32)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("n", "k"), [(1, 8), (33, 264), (48, 4096), (257, 520)])
@pytest.mark.parametrize("where", ["hbm", "host", "split"])
@pytest.mark.parametrize(("p", "row_div"), [(1, 1), (7, 1), (40, 2), (300, 1)])
def test_every_pair_matches_float64(dtype, n, k, where, p, row_div):
    e = 5
    n_hbm = {"hbm": e, "host": 0, "split": 2}[where]
    ex = Experts(e, n, k, n_hbm, dtype, seed=n + k)
    x = torch.randn(-(-p // row_div), k, device="cuda").to(dtype)
    pair = pairs_of(p, e, seed=p)
    y = torch.full((p, n), float("nan"), device="cuda", dtype=dtype)
    expert_gemv(ex.ptrs, x, pair, row_div, n, e, n_hbm, out=y, host_ctas=7)
    rows = torch.arange(p, device="cuda") // row_div
    w = ex.dense[pair.long()]  # (p, n, k)
    want = torch.einsum("pnk,pk->pn", w.double(), x[rows].double())
    torch_own = torch.stack([F.linear(x[rows[i]][None], w[i])[0] for i in range(p)])
    assert torch.isfinite(y).all()
    bound = 2 * rel(torch_own, want) + 2 * torch.finfo(dtype).eps
    assert rel(y, want) <= bound, (rel(y, want), bound)
    again = torch.full_like(y, float("nan"))
    expert_gemv(ex.ptrs, x, pair, row_div, n, e, n_hbm, out=again, host_ctas=7)
    assert torch.equal(again, y)  # bitwise deterministic
    ex.free()


def test_unrouted_pairs_are_left_alone_and_zeros_inf_nan_propagate():
    e, n, k = 4, 40, 136
    ex = Experts(e, n, k, 2, torch.bfloat16)
    x = torch.randn(6, k, device="cuda").bfloat16()
    x[1] = 0
    x[2, 5] = float("inf")
    x[3, 7] = float("nan")
    pair = torch.tensor([0, 3, 1, 2, -1, 3], dtype=torch.int32, device="cuda")
    y = torch.full((6, n), 7.0, device="cuda", dtype=torch.bfloat16)
    expert_gemv(ex.ptrs, x, pair, 1, n, e, 2, out=y)
    assert (y[4] == 7).all()  # no expert -1: untouched
    assert (y[1] == 0).all()
    want = torch.einsum("pnk,pk->pn", ex.dense[pair.clamp(min=0).long()].double(), x.double())
    for row in (2, 3):
        assert torch.equal(torch.isfinite(y[row]), torch.isfinite(want[row]))
    assert torch.isfinite(y[[0, 5]]).all()
    ex.free()


def test_bad_arguments_are_refused_by_name():
    from smemkit.errors import InvalidArgumentError

    ex = Experts(2, 16, 16, 2, torch.bfloat16)
    x = torch.randn(2, 16, device="cuda").bfloat16()
    pair = torch.zeros(2, dtype=torch.int32, device="cuda")
    with pytest.raises(InvalidArgumentError, match="multiple of 8"):
        expert_gemv(ex.ptrs, torch.randn(2, 12, device="cuda").bfloat16(), pair, 1, 16, 2, 2)
    with pytest.raises(InvalidArgumentError, match="pair_expert"):
        expert_gemv(ex.ptrs, x, pair.long(), 1, 16, 2, 2)
    with pytest.raises(InvalidArgumentError, match="pair_expert"):
        expert_gemv(ex.ptrs, x, torch.zeros(MAX_PAIRS + 1, dtype=torch.int32, device="cuda"), 1024, 16, 2, 2)
    with pytest.raises(InvalidArgumentError, match="row_div"):
        expert_gemv(ex.ptrs, x, torch.zeros(3, dtype=torch.int32, device="cuda"), 1, 16, 2, 2)


def experts_module(e: int, h: int, i: int, host: int, seed: int = 0) -> tuple[OffloadedExperts, list]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    gate_up = (torch.randn(e, 2 * i, h, device="cuda", generator=g) * 0.05).bfloat16()
    down = (torch.randn(e, h, i, device="cuda", generator=g) * 0.05).bfloat16()
    buffers, parts = [], []
    for t in (gate_up, down):
        part = t[e - host:]
        buf = PinnedBuffer(max(1, part.numel() * part.element_size()))
        buffers.append(buf)
        shape = tuple(part.shape)
        pinned = buf.tensor(t.dtype, shape) if host else torch.empty(shape, dtype=t.dtype)
        pinned.copy_(part.cpu())
        parts.append((t[: e - host].clone(), pinned, buf.cuda_view(t.dtype, shape) if host else None))
    (gu, gu_host, gu_view), (d, d_host, d_view) = parts
    mod = OffloadedExperts(gu, d, gu_host, d_host, nn.SiLU(), gate_up_host_view=gu_view,
                           down_host_view=d_view)
    return mod, buffers


@pytest.mark.parametrize("host", [0, 3, 8])
@pytest.mark.parametrize("tokens", [1, 5, 64])
def test_kernel_path_matches_the_per_expert_loop_and_captures(host, tokens):
    e, h, i, k = 8, 256, 96, 2
    mod, buffers = experts_module(e, h, i, host)
    hidden = torch.randn(tokens, h, device="cuda").bfloat16()
    logits = torch.randn(tokens, e, device="cuda")
    weights, index = torch.softmax(logits, -1).topk(k, dim=-1)
    assert mod.uses_kernel(index.numel())
    with torch.no_grad():
        got = mod(hidden, index, weights)
        loop = mod._loop_forward(hidden, index, weights)
        ref_hidden = hidden.double()
        want = torch.zeros(tokens, h, dtype=torch.float64, device="cuda")
        full_gu = torch.cat([mod.gate_up_hbm, mod.gate_up_host.cuda()]).double()
        full_d = torch.cat([mod.down_hbm, mod.down_host.cuda()]).double()
        for t in range(tokens):
            for s in range(k):
                ex = int(index[t, s])
                gate, up = (full_gu[ex] @ ref_hidden[t]).chunk(2)
                want[t] += weights[t, s].double() * (full_d[ex] @ (F.silu(gate) * up))
    assert rel(got, want) <= 2 * rel(loop, want) + 1e-2
    static_in = (hidden.clone(), index.clone(), weights.clone())
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad():
        mod(*static_in)  # warm-up outside capture (kernel loaded)
        with torch.cuda.graph(graph):
            out = mod(*static_in)
    hidden2 = torch.randn_like(hidden)
    static_in[0].copy_(hidden2)
    graph.replay()
    torch.cuda.synchronize()
    with torch.no_grad():
        assert torch.equal(out, mod(hidden2, index, weights))
    mod.free()
    for b in buffers:
        b.free()


def test_capturing_more_pairs_than_the_kernel_takes_is_a_clear_error():
    from smemkit.errors import InvalidArgumentError

    mod, buffers = experts_module(8, 64, 32, 2)
    tokens = MAX_PAIRS // 2 + 1  # k = 2: one pair past the kernel's limit
    hidden = torch.randn(tokens, 64, device="cuda").bfloat16()
    weights, index = torch.softmax(torch.randn(tokens, 8, device="cuda"), -1).topk(2, dim=-1)
    assert not mod.uses_kernel(index.numel())
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(InvalidArgumentError, match="cannot be captured"), torch.no_grad(), \
            torch.cuda.graph(graph):
        mod(hidden, index, weights)
    mod.free()
    for b in buffers:
        b.free()
