"""The custom ops, modules and optimizer on the GPU, where float32 runs smemkit's kernels."""

import pytest
import torch

import smemkit.nn as snn
from smemkit.optim import LARS
from smemkit.quant import rowwise_int8
from smemkit.reduction.eager import EAGER
from smemkit.reduction.workloads import LARS_EXAMPLE_SCALARS

pytestmark = pytest.mark.gpu
OPS = torch.ops.smemkit


def rand(*shape):
    return torch.randn(*shape, device="cuda")


@pytest.mark.parametrize("op,args", [
    ("layernorm_bwd", lambda: (rand(64, 4096), rand(64, 4096), rand(4096), 1e-5)),
    ("softmax_bwd", lambda: (rand(2, 32, 8192), rand(2, 32, 8192))),
    ("lars_step", lambda: (rand(8, 20000), rand(8, 20000), rand(8, 20000), 0.1, 0.9, 1e-4, 1e-3)),
    ("rowwise_int8", lambda: (rand(16, 5000),)),
    ("layer_norm", lambda: (rand(16, 1024).requires_grad_(), rand(1024).requires_grad_(),
                            rand(1024).requires_grad_(), 1e-5)),
    ("softmax", lambda: (rand(16, 3000).requires_grad_(),)),
])
def test_opcheck_cuda(op, args):
    torch.library.opcheck(getattr(OPS, op).default, args())


def test_gradcheck_cuda_float64():
    x = torch.randn(3, 9, dtype=torch.float64, device="cuda", requires_grad=True)
    w = torch.randn(9, dtype=torch.float64, device="cuda", requires_grad=True)
    b = torch.randn(9, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w, b: OPS.layer_norm(x, w, b, 1e-5), (x, w, b))
    z = torch.randn(4, 11, dtype=torch.float64, device="cuda", requires_grad=True)
    assert torch.autograd.gradcheck(OPS.softmax, (z,))


@pytest.mark.parametrize("width", [4096, 65536])
def test_layernorm_module_kernel_gradients(width):
    ours, ref = snn.LayerNorm(width).cuda(), torch.nn.LayerNorm(width).cuda()
    with torch.no_grad():
        ours.weight.copy_(torch.randn(width))
        ref.weight.copy_(ours.weight)
    x = rand(64, width).requires_grad_()
    x64 = x.detach().double().requires_grad_()
    dy = rand(64, width)
    (ours(x) * dy).sum().backward()
    (ref.double()(x64) * dy.double()).sum().backward()
    err = (x.grad.double() - x64.grad).norm() / x64.grad.norm()
    assert err < 1e-5


def test_softmax_kernel_gradient():
    z = (rand(32, 65536) * 3).requires_grad_()
    z64 = z.detach().double().requires_grad_()
    dy = rand(32, 65536)
    (snn.softmax(z) * dy).sum().backward()
    (torch.softmax(z64, -1) * dy.double()).sum().backward()
    assert (z.grad.double() - z64.grad).norm() / z64.grad.norm() < 1e-5


def test_fullgraph_compile_cuda():
    model = torch.nn.Sequential(torch.nn.Linear(256, 4096), snn.LayerNorm(4096), snn.Softmax()).cuda()
    compiled = torch.compile(model, fullgraph=True)
    x = rand(64, 256)
    out = compiled(x)
    out.pow(2).sum().backward()
    torch.testing.assert_close(out, model(x), rtol=1e-4, atol=1e-6)


def test_lars_optimizer_cuda():
    p = torch.nn.Parameter(rand(512, 256))
    p.grad = rand(512, 256) * 0.01
    start = p.detach().clone()
    opt = LARS([p], **LARS_EXAMPLE_SCALARS)
    opt.step()
    want = EAGER["lars"]({"w": start.double().reshape(1, -1), "g": p.grad.double().reshape(1, -1),
                          "v": torch.zeros(1, p.numel(), dtype=torch.float64, device="cuda")},
                         LARS_EXAMPLE_SCALARS)
    err = (p.detach().double().reshape(1, -1) - want["w_new"]).norm() / want["w_new"].norm()
    assert err < 1e-6


def test_rowwise_int8_cuda():
    x = rand(64, 10000) * 4
    q, scale = rowwise_int8(x)
    want = EAGER["quant_int8"]({"x": x.double()}, {})
    assert (q.double() - want["q"]).abs().max() <= 1
    torch.testing.assert_close(scale.double(), want["scale"], rtol=1e-6, atol=0)
