"""The six SPEC §1 workloads in plain PyTorch, written out by hand from the formulas.

Independent of the spec DSL: the tests check each spec's derived float64 reference against
these (called on float64 tensors), and the benchmarks time them in float32 as the eager and
``torch.compile`` baselines. Every function keeps its inputs' dtype.
"""

from __future__ import annotations

import torch

EPS = 1e-5


def layernorm_bwd(x, dy, gamma, eps=EPS):
    N = x.shape[1]
    mu = x.sum(1, keepdim=True) / N
    var = ((x - mu) ** 2).sum(1, keepdim=True) / N  # SPEC's sum(x^2)/N - mu^2, in stable form
    r = 1 / torch.sqrt(var + eps)
    xhat = (x - mu) * r
    g = gamma * dy
    a = g.sum(1, keepdim=True) / N
    b = (g * xhat).sum(1, keepdim=True) / N
    return {"dx": r * (g - a - xhat * b)}


def wvar_bwd(x, w, dy, eps=EPS):
    W = w.sum(1, keepdim=True)
    mu = (w * x).sum(1, keepdim=True) / W
    var = (w * (x - mu) ** 2).sum(1, keepdim=True) / W
    r = 1 / torch.sqrt(var + eps)
    sdy = dy.sum(1, keepdim=True)
    sdyx = (dy * (x - mu)).sum(1, keepdim=True)
    return {"dx": r * dy - r * (w / W) * sdy - r**3 * w * (x - mu) / W * sdyx}


def pearson_bwd(x, y, g):
    a = x - x.mean(1, keepdim=True)
    b = y - y.mean(1, keepdim=True)
    saa = (a * a).sum(1, keepdim=True)
    sbb = (b * b).sum(1, keepdim=True)
    sab = (a * b).sum(1, keepdim=True)
    r = sab / torch.sqrt(saa * sbb)
    g = g.reshape(-1, 1)
    root = torch.sqrt(saa * sbb)
    return {"dx": g * (b / root - r * a / saa), "dy": g * (a / root - r * b / sbb)}


def softmax_bwd(z, dy):
    p = torch.softmax(z, dim=1)
    c = (dy * p).sum(1, keepdim=True)
    return {"dz": p * (dy - c)}


def lars(w, g, v, lr, momentum, weight_decay, eta):
    wn = w.norm(dim=1, keepdim=True)
    gn = g.norm(dim=1, keepdim=True)
    trust = torch.where((wn > 0) & (gn > 0), eta * wn / (gn + weight_decay * wn),
                        torch.ones_like(wn))
    v_new = momentum * v + lr * trust * (g + weight_decay * w)
    return {"v_new": v_new, "w_new": w - v_new}


def quant_int8(x):
    s = torch.clamp(x.abs().amax(1, keepdim=True) / 127, min=1e-12)
    s = torch.where(torch.isnan(x).any(1, keepdim=True), torch.full_like(s, float("nan")), s)
    u = x / s
    q = torch.clamp(torch.round(u), -127, 127)
    q = torch.where(torch.isnan(u), torch.zeros_like(q), q)
    return {"q": q.to(torch.int8) if x.dtype != torch.float64 else q, "scale": s.reshape(-1)}


EAGER = {
    "layernorm_bwd": lambda t, s: layernorm_bwd(t["x"], t["dy"], t["gamma"], s.get("eps", EPS)),
    "wvar_bwd": lambda t, s: wvar_bwd(t["x"], t["w"], t["dy"], s.get("eps", EPS)),
    "pearson_bwd": lambda t, s: pearson_bwd(t["x"], t["y"], t["g"]),
    "softmax_bwd": lambda t, s: softmax_bwd(t["z"], t["dy"]),
    "lars": lambda t, s: lars(t["w"], t["g"], t["v"], **s),
    "quant_int8": lambda t, s: quant_int8(t["x"]),
}
