"""Custom ops, modules and the optimizer on the CPU (their PyTorch fallback path).

On the CPU the ops run the hand-written PyTorch implementation; what is checked here is the
registration (schema, fake kernels, autograd), gradients, and tracing with fullgraph=True.
tests/gpu/test_drop_in_gpu.py checks the same API on the kernels.
"""

import pytest
import torch
from handwritten_reference import HANDWRITTEN

import smemkit.nn as snn
from smemkit.optim import LARS
from smemkit.quant import rowwise_int8
from smemkit.reduction.workloads import LARS_EXAMPLE_SCALARS as LARS_SCALARS

OPS = torch.ops.smemkit


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.parametrize("op,args", [
    ("layernorm_bwd", lambda: (rand(4, 33), rand(4, 33), rand(33), 1e-5)),
    ("softmax_bwd", lambda: (rand(2, 3, 17), rand(2, 3, 17))),
    ("lars_step", lambda: (rand(3, 40), rand(3, 40), rand(3, 40), 0.1, 0.9, 1e-4, 1e-3)),
    ("rowwise_int8", lambda: (rand(5, 31),)),
    ("layer_norm", lambda: (rand(4, 33).requires_grad_(),
                            rand(33).requires_grad_(), rand(33).requires_grad_(), 1e-5)),
    ("softmax", lambda: (rand(3, 19).requires_grad_(),)),
])
def test_opcheck(op, args):
    torch.library.opcheck(getattr(OPS, op).default, args())


def test_layer_norm_gradcheck_float64():
    x = torch.randn(3, 9, dtype=torch.float64, requires_grad=True)
    w = torch.randn(9, dtype=torch.float64, requires_grad=True)
    b = torch.randn(9, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: OPS.layer_norm(x, w, b, 1e-5), (x, w, b))


def test_softmax_gradcheck_float64():
    z = torch.randn(4, 11, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(OPS.softmax, (z,))


@pytest.mark.parametrize("affine,bias", [(True, True), (True, False), (False, False)])
def test_layernorm_module_matches_torch(affine, bias):
    ours, ref = snn.LayerNorm(48, elementwise_affine=affine, bias=bias), torch.nn.LayerNorm(
        48, elementwise_affine=affine, bias=bias)
    if affine:
        with torch.no_grad():
            ours.weight.copy_(torch.randn(48))
            ref.weight.copy_(ours.weight)
    x = torch.randn(2, 7, 48, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    dy = torch.randn(2, 7, 48)
    (ours(x) * dy).sum().backward()
    (ref(x_ref) * dy).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-4, atol=1e-5)
    if affine:
        torch.testing.assert_close(ours.weight.grad, ref.weight.grad, rtol=1e-4, atol=1e-4)
    if bias:
        torch.testing.assert_close(ours.bias.grad, ref.bias.grad, rtol=1e-4, atol=1e-4)


def test_fullgraph_compile_has_no_graph_breaks():
    model = torch.nn.Sequential(torch.nn.Linear(32, 32), snn.LayerNorm(32), snn.Softmax())
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    x = torch.randn(4, 32)
    out = compiled(x)
    out.pow(2).sum().backward()
    torch.testing.assert_close(out, model(x))


def test_lars_optimizer_matches_the_formula():
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(6, 10))
    p.grad = torch.randn(6, 10) * 0.01
    start = p.detach().clone()
    opt = LARS([p], **LARS_SCALARS)
    opt.step()
    want = HANDWRITTEN["lars"]({"w": start.reshape(1, -1), "g": p.grad.reshape(1, -1),
                                "v": torch.zeros(1, 60)}, LARS_SCALARS)
    torch.testing.assert_close(p.detach().reshape(1, -1), want["w_new"].float(), rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(opt.state[p]["momentum_buffer"].reshape(1, -1), want["v_new"].float(),
                               rtol=1e-6, atol=1e-8)


def test_lars_rejects_negative_hyperparameters():
    with pytest.raises(ValueError, match="lr must be >= 0"):
        LARS([torch.nn.Parameter(torch.zeros(2))], lr=-1.0)


def test_rowwise_int8_round_trip():
    x = torch.randn(3, 4, 100) * 5
    q, scale = rowwise_int8(x)
    assert q.dtype == torch.int8 and q.shape == x.shape and scale.shape == (3, 4)
    deq = q.float() * scale.unsqueeze(-1)
    assert (deq - x).abs().max() <= scale.max() / 2 + 1e-6
