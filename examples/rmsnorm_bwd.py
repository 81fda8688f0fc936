"""A seventh reduction-reuse workload written by a user: RMSNorm backward (dx only).

    y = gamma * x * r,  r = 1 / sqrt(mean(x^2) + eps)
    dx = r * (g - x * r^2 * mean(g * x)),  g = gamma * dy

Nothing in smemkit changes: the spec below is all it takes to get the float64 reference, the
byte accounting of the cost model and every kernel variant (cluster, staged, re-read).
Run on a GPU:  python examples/rmsnorm_bwd.py
"""

from __future__ import annotations

from smemkit.reduction import Output, ReductionSpec, Stage, Stat

RMSNORM_BWD = ReductionSpec(
    name="rmsnorm_bwd",
    description="RMSNorm backward dx (statistics recomputed from x, no dgamma)",
    inputs=("x", "dy"),  # (M, N) float32 rows
    columns=("gamma",),  # (N,) per-column parameter
    scalars=(("eps", 1e-5),),  # hyper-parameter with a default
    lets=(("g", "gamma * dy"),),  # a named per-element value
    stages=(
        # one stage: both sums need nothing from an earlier stage, so one exchange suffices
        Stage((Stat("sum_x2", "sum", "x * x"), Stat("sum_gx", "sum", "g * x")),
              derive=(("r", "rsqrt(sum_x2 / N + eps)"), ("c", "r * r * sum_gx / N"))),
    ),
    outputs=(Output("dx", "r * (g - x * c)"),),
)


def main() -> None:
    import torch

    from smemkit.reduction import reference, run
    from smemkit.reduction.reference import relative_error

    x, dy = torch.randn(2, 1024, 65536, device="cuda").unbind(0)
    gamma = torch.randn(65536, device="cuda")
    tensors = {"x": x, "dy": dy, "gamma": gamma}
    print("bytes per element:", RMSNORM_BWD.bytes)
    for variant, P in (("cluster", 8), ("reread", None)):
        dx = run(RMSNORM_BWD, tensors, variant=variant, cluster_size=P)["dx"]
        err = relative_error(dx, reference(RMSNORM_BWD, tensors, {})["dx"])
        print(f"{variant:8s} P={P}: relative error {err:.2e}")


if __name__ == "__main__":
    main()
