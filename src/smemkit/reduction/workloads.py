"""The six built-in workloads of SPEC §1 (CREDIT's evaluation set), as declarative specs.

Float32 rows in and out; eps = 1e-5. Statistics are staged so that each is numerically stable
in float32 (centred second moments after the mean is known) rather than merged into one pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from smemkit.reduction.spec import Output, ReductionSpec, Stage, Stat

if TYPE_CHECKING:
    import torch

EPS = 1e-5

LAYERNORM_BWD = ReductionSpec(
    name="layernorm_bwd",
    description="LayerNorm backward dx (statistics recomputed from x, no dgamma)",
    inputs=("x", "dy"),
    columns=("gamma",),
    scalars=(("eps", EPS),),
    lets=(("g", "gamma * dy"), ("xc", "x - mu"), ("xhat", "xc * r")),
    stages=(
        Stage((Stat("sum_x", "sum", "x"),), derive=(("mu", "sum_x / N"),)),
        Stage(
            (Stat("sum_xc2", "sum", "xc * xc"), Stat("sum_g", "sum", "g"),
             Stat("sum_gxc", "sum", "g * xc")),
            derive=(("r", "rsqrt(sum_xc2 / N + eps)"), ("a", "sum_g / N"),
                    ("b", "r * sum_gxc / N")),
        ),
    ),
    outputs=(Output("dx", "r * (g - a - xhat * b)"),),
)

WVAR_BWD = ReductionSpec(
    name="wvar_bwd",
    description="backward of weighted standardisation y = (x - mu_w) * r_w",
    inputs=("x", "w", "dy"),
    scalars=(("eps", EPS),),
    lets=(("xc", "x - mu"),),
    stages=(
        Stage((Stat("W", "sum", "w"), Stat("sum_wx", "sum", "w * x")),
              derive=(("mu", "sum_wx / W"),)),
        Stage(
            (Stat("sum_wxc2", "sum", "w * xc * xc"), Stat("sum_dy", "sum", "dy"),
             Stat("sum_dyxc", "sum", "dy * xc")),
            derive=(("r", "rsqrt(sum_wxc2 / W + eps)"),),
        ),
    ),
    outputs=(Output("dx", "r * dy - r * (w / W) * sum_dy - r ** 3 * w * xc / W * sum_dyxc"),),
)

PEARSON_BWD = ReductionSpec(
    name="pearson_bwd",
    description="gradient of the row-wise Pearson correlation r(x, y) scaled by g[row]",
    inputs=("x", "y"),
    row_inputs=("g",),
    lets=(("a", "x - xbar"), ("b", "y - ybar")),
    stages=(
        Stage((Stat("sum_x", "sum", "x"), Stat("sum_y", "sum", "y")),
              derive=(("xbar", "sum_x / N"), ("ybar", "sum_y / N"))),
        Stage(
            (Stat("saa", "sum", "a * a"), Stat("sbb", "sum", "b * b"), Stat("sab", "sum", "a * b")),
            derive=(("d", "sqrt(saa * sbb)"), ("corr", "sab / d")),
        ),
    ),
    outputs=(Output("dx", "g * (b / d - corr * a / saa)"),
             Output("dy", "g * (a / d - corr * b / sbb)")),
)

SOFTMAX_BWD = ReductionSpec(
    name="softmax_bwd",
    description="softmax backward with p = softmax(z) recomputed from the logits",
    inputs=("z", "dy"),
    lets=(("e", "exp(z - m)"),),
    stages=(
        Stage((Stat("m", "max", "z"),)),
        Stage((Stat("sum_e", "sum", "e"), Stat("sum_dye", "sum", "dy * e")),
              derive=(("c", "sum_dye / sum_e"),)),
    ),
    outputs=(Output("dz", "e / sum_e * (dy - c)"),),
)

LARS = ReductionSpec(
    name="lars",
    description="LARS momentum step, one row per layer's parameters",
    inputs=("w", "g", "v"),
    scalars=(("lr", None), ("momentum", None), ("weight_decay", None), ("eta", None)),
    stages=(
        Stage((Stat("sum_w2", "sum", "w * w"), Stat("sum_g2", "sum", "g * g")),
              derive=(("wn", "sqrt(sum_w2)"), ("gn", "sqrt(sum_g2)"),
                      ("trust", "eta * wn / (gn + weight_decay * wn) if wn > 0 and gn > 0 else 1"))),
    ),
    outputs=(Output("v_new", "momentum * v + lr * trust * (g + weight_decay * w)"),
             Output("w_new", "w - v_new")),
)

QUANT_INT8 = ReductionSpec(
    name="quant_int8",
    description="row-wise symmetric int8 quantisation with per-row scale",
    inputs=("x",),
    lets=(("u", "x / s"),),
    stages=(
        Stage((Stat("amax", "max", "abs(x)"),), derive=(("s", "max(amax / 127, 1e-12)"),)),
    ),
    outputs=(Output("q", "0 if isnan(u) else min(max(round(u), -127), 127)", dtype="int8"),),
    row_outputs=(("scale", "s"),),
)

BUILTIN: dict[str, ReductionSpec] = {
    s.name: s for s in (LAYERNORM_BWD, WVAR_BWD, PEARSON_BWD, SOFTMAX_BWD, LARS, QUANT_INT8)
}

# Negative controls (paper §III-D): expressible, and rejected by the cost model with a reason.
NEGATIVE_CONTROLS: dict[str, ReductionSpec] = {
    s.name: s
    for s in (
        ReductionSpec(name="row_sum", description="one-pass reduction: nothing re-read",
                      inputs=("x",), stages=(Stage((Stat("total", "sum", "x"),)),), outputs=(),
                      row_outputs=(("total_out", "total"),)),
        ReductionSpec(name="cumsum_normalize", description="scan: running sums over the row",
                      inputs=("x",), stages=(Stage((Stat("run", "scan", "x"),
                                                    Stat("total", "sum", "x"))),),
                      outputs=(Output("y", "run / total"),)),
        ReductionSpec(name="median_center", description="selection: subtract the row median",
                      inputs=("x",), stages=(Stage((Stat("med", "median", "x"),)),),
                      outputs=(Output("y", "x - med"),)),
        ReductionSpec(name="smooth_center", description="stencil: 3-point average minus the mean",
                      inputs=("x",), stages=(Stage((Stat("total", "sum", "x"),)),),
                      outputs=(Output("y", "(shift(x, -1) + x + shift(x, 1)) / 3 - total / N"),)),
    )
}

LARS_EXAMPLE_SCALARS = {"lr": 0.1, "momentum": 0.9, "weight_decay": 1e-4, "eta": 1e-3}


def example_inputs(name: str, M: int, N: int, *, device: str | torch.device = "cpu",
                   generator: torch.Generator | None = None) -> tuple[dict, dict]:
    """Fresh random inputs for a built-in workload (positive weights for wvar), made on the
    generator's device (default: ``device``) and moved to ``device``."""
    import torch

    where = generator.device if generator is not None else torch.device(device)

    def randn(*shape):
        return torch.randn(*shape, generator=generator, device=where).to(device)

    def rand(*shape):
        return torch.rand(*shape, generator=generator, device=where).to(device)

    if name == "layernorm_bwd":
        return {"x": randn(M, N) * 2 + 0.5, "dy": randn(M, N), "gamma": randn(N)}, {}
    if name == "wvar_bwd":
        w = rand(M, N) + 0.1
        return {"x": randn(M, N) + 1, "w": w, "dy": randn(M, N)}, {}
    if name == "pearson_bwd":
        x = randn(M, N)
        return {"x": x, "y": 0.5 * x + randn(M, N), "g": randn(M)}, {}
    if name == "softmax_bwd":
        return {"z": randn(M, N) * 3, "dy": randn(M, N)}, {}
    if name == "lars":
        tensors = {"w": randn(M, N), "g": randn(M, N) * 0.01, "v": randn(M, N) * 0.001}
        return tensors, dict(LARS_EXAMPLE_SCALARS)
    if name == "quant_int8":
        return {"x": randn(M, N) * 4}, {}
    raise KeyError(name)
