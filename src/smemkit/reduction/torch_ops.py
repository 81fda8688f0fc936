"""The reduction kernels as PyTorch custom operators (``torch.ops.smemkit.*``).

Registered with ``torch.library.custom_op`` and fake (meta) kernels, so they trace under
``torch.compile(fullgraph=True)`` without graph breaks. float32 CUDA tensors on sm_90+ run smemkit's
kernels (unless the shape is one the kernels handle badly: see ``api.kernel_pays_off``); any
other device, dtype or GPU runs the hand-written PyTorch implementation of :mod:`.eager` (same
formulas), so the ops are total — and ``opcheck``/``gradcheck`` can run in
float64 on the CPU. Every op works on the last dimension of an input of any rank.
"""

from __future__ import annotations

import torch
from torch import Tensor

from smemkit.reduction import api, eager
from smemkit.reduction.workloads import BUILTIN


def _rows(t: Tensor) -> Tensor:
    """2-D, contiguous and 16-byte aligned (a contiguous offset view is copied)."""
    rows = t.reshape(-1, t.shape[-1]).contiguous()
    return rows.clone() if rows.data_ptr() % 16 else rows


def _kernel_ok(name: str, *tensors: Tensor) -> bool:
    """float32 CUDA tensors on an sm_90+ GPU, at a shape where the kernel is the right tool."""
    if not all(t.is_cuda and t.dtype == torch.float32 for t in tensors):
        return False
    x = tensors[0]
    rows = x.numel() // max(x.shape[-1], 1)
    return rows > 0 and x.shape[-1] > 0 and api.kernel_pays_off(BUILTIN[name], rows, x.shape[-1], x.device)


@torch.library.custom_op("smemkit::layernorm_bwd", mutates_args=())
def layernorm_bwd(x: Tensor, dy: Tensor, gamma: Tensor, eps: float) -> Tensor:
    """dx of LayerNorm over the last dimension (statistics recomputed from x)."""
    if _kernel_ok("layernorm_bwd", x, dy, gamma):
        return api.layernorm_bwd(_rows(x), _rows(dy), gamma.contiguous(), eps=eps).reshape(x.shape)
    return eager.layernorm_bwd(_rows(x), _rows(dy), gamma, eps)["dx"].reshape(x.shape)


@layernorm_bwd.register_fake
def _(x: Tensor, dy: Tensor, gamma: Tensor, eps: float) -> Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("smemkit::softmax_bwd", mutates_args=())
def softmax_bwd(z: Tensor, dy: Tensor) -> Tensor:
    """dz of softmax over the last dimension, p recomputed from the logits z."""
    if _kernel_ok("softmax_bwd", z, dy):
        return api.softmax_bwd(_rows(z), _rows(dy)).reshape(z.shape)
    return eager.softmax_bwd(_rows(z), _rows(dy))["dz"].reshape(z.shape)


@softmax_bwd.register_fake
def _(z: Tensor, dy: Tensor) -> Tensor:
    return torch.empty_like(z)


@torch.library.custom_op("smemkit::lars_step", mutates_args=())
def lars_step(w: Tensor, g: Tensor, v: Tensor, lr: float, momentum: float, weight_decay: float,
              eta: float) -> tuple[Tensor, Tensor]:
    """One LARS step per row (last dimension): returns (w_new, v_new)."""
    if _kernel_ok("lars", w, g, v):
        w_new, v_new = api.lars(_rows(w), _rows(g), _rows(v), lr=lr, momentum=momentum,
                                weight_decay=weight_decay, eta=eta)
    else:
        out = eager.lars(_rows(w), _rows(g), _rows(v), lr, momentum, weight_decay, eta)
        w_new, v_new = out["w_new"], out["v_new"]
    return w_new.reshape(w.shape), v_new.reshape(v.shape)


@lars_step.register_fake
def _(w, g, v, lr, momentum, weight_decay, eta):
    return torch.empty_like(w), torch.empty_like(v)


@torch.library.custom_op("smemkit::rowwise_int8", mutates_args=())
def rowwise_int8(x: Tensor) -> tuple[Tensor, Tensor]:
    """Symmetric int8 quantisation per row: (q int8, same shape as x; scale float32, x.shape[:-1])."""
    if _kernel_ok("quant_int8", x):
        q, scale = api.quant_int8(_rows(x))
    else:
        out = eager.quant_int8(_rows(x).float())
        q, scale = out["q"].to(torch.int8), out["scale"].float()
    return q.reshape(x.shape), scale.reshape(x.shape[:-1])


@rowwise_int8.register_fake
def _(x: Tensor) -> tuple[Tensor, Tensor]:
    return (torch.empty(x.shape, dtype=torch.int8, device=x.device),
            torch.empty(x.shape[:-1], dtype=torch.float32, device=x.device))


# ---- differentiable forwards whose backward is a reduction-reuse kernel ---------------------

@torch.library.custom_op("smemkit::layer_norm", mutates_args=())
def layer_norm(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    """LayerNorm over the last dimension; its backward runs ``smemkit::layernorm_bwd``."""
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)


@layer_norm.register_fake
def _(x: Tensor, weight: Tensor, bias: Tensor, eps: float) -> Tensor:
    return torch.empty_like(x)


def _layer_norm_setup(ctx, inputs, output) -> None:
    x, weight, _bias, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _layer_norm_backward(ctx, dy: Tensor):
    x, weight = ctx.saved_tensors
    dx = torch.ops.smemkit.layernorm_bwd(x, dy, weight, ctx.eps)
    # dgamma and dbeta are column sums over rows: plain PyTorch (not a row reduction-reuse)
    x2, dy2 = x.reshape(-1, x.shape[-1]), dy.reshape(-1, dy.shape[-1])  # traced: no data pointers
    mean = x2.mean(-1, keepdim=True)
    xhat = (x2 - mean) * torch.rsqrt(x2.var(-1, unbiased=False, keepdim=True) + ctx.eps)
    return dx, (dy2 * xhat).sum(0), dy2.sum(0), None


layer_norm.register_autograd(_layer_norm_backward, setup_context=_layer_norm_setup)


@torch.library.custom_op("smemkit::softmax", mutates_args=())
def softmax(z: Tensor) -> Tensor:
    """Softmax over the last dimension; its backward runs ``smemkit::softmax_bwd`` from the logits."""
    return torch.softmax(z, dim=-1)


@softmax.register_fake
def _(z: Tensor) -> Tensor:
    return torch.empty_like(z)


def _softmax_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0])


def _softmax_backward(ctx, dy: Tensor):
    (z,) = ctx.saved_tensors
    return torch.ops.smemkit.softmax_bwd(z, dy)


softmax.register_autograd(_softmax_backward, setup_context=_softmax_setup)
