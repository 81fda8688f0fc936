"""The float64 reference of a spec, evaluated with torch (on whatever device the inputs are)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import expr
from smemkit.reduction.spec import ReductionSpec

if TYPE_CHECKING:
    import torch


def _reduce(op: str, t: torch.Tensor) -> torch.Tensor:
    """One stat of each row, kept as a column (``scan``: one running value per element)."""
    import torch

    if op == "median":
        return torch.median(t, dim=1, keepdim=True).values
    if op == "scan":
        return torch.cumsum(t, dim=1)
    return {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[op](t, dim=1, keepdim=True)


def reference(
    spec: ReductionSpec, tensors: Mapping[str, torch.Tensor], scalars: Mapping[str, float]
) -> dict[str, torch.Tensor]:
    """Outputs (M, N) and row outputs (M,) in float64; int8 outputs as their float code values."""
    import torch

    x0 = tensors[spec.inputs[0]]
    if x0.dim() != 2:
        raise InvalidArgumentError(f"{spec.inputs[0]} must be 2-D (M, N), got {tuple(x0.shape)}")
    M, N = x0.shape
    env: dict[str, object] = {"N": float(N)}
    for name in spec.inputs:
        env[name] = tensors[name].to(torch.float64)
    for name in spec.columns:
        env[name] = tensors[name].to(torch.float64).reshape(1, N)
    for name in spec.row_inputs:
        env[name] = tensors[name].to(torch.float64).reshape(M, 1)
    for name, default in spec.scalars:
        value = scalars.get(name, default)
        if value is None:
            raise InvalidArgumentError(f"{spec.name} needs the scalar {name!r}")
        env[name] = float(value)
    lets = dict(spec.lets)

    def value(text: str) -> torch.Tensor:
        for let in spec.let_closure(text):
            if let not in env:
                env[let] = expr.evaluate(lets[let], env)
        return expr.evaluate(text, env)

    for stage in spec.stages:
        for stat in stage.stats:
            per_element = value(stat.expr).expand(M, N)
            env[stat.name] = _reduce(stat.op, per_element)
        for let in spec.lets:  # lets depending on this stage's values are recomputed later
            env.pop(let[0], None)
        for name, text in stage.derive:
            env[name] = expr.evaluate(text, env)
    result: dict[str, torch.Tensor] = {}
    for out in spec.outputs:
        env[out.name] = value(out.expr).expand(M, N)
        result[out.name] = env[out.name]
    for name, text in spec.row_outputs:
        result[name] = expr.evaluate(text, env).expand(M, 1).reshape(M)
    return result


def relative_error(got: torch.Tensor, ref: torch.Tensor) -> float:
    """‖got − ref‖ / ‖ref‖ over the elements where the reference is finite.

    Non-finite reference elements are compared separately by :func:`nonfinite_mismatches`;
    a non-finite ``got`` where the reference is finite makes the error infinite.
    """
    import torch

    ref = ref.to(torch.float64)
    got = got.to(ref.device, torch.float64)
    finite = torch.isfinite(ref)
    if not bool(torch.isfinite(got[finite]).all()):
        return float("inf")
    diff = torch.linalg.vector_norm(got[finite] - ref[finite])
    scale = torch.linalg.vector_norm(ref[finite])
    if scale == 0:
        return float(diff)
    return float(diff / scale)


def output_errors(got: Mapping[str, torch.Tensor],
                  want: Mapping[str, torch.Tensor]) -> dict[str, float | int | None]:
    """How far a kernel's outputs are from the float64 reference: ``rel_err``, the worst
    :func:`relative_error` over the float outputs, and ``max_code_diff``, the largest difference of
    an int8 output's codes from the reference's (None without int8 outputs; quantization may round
    either way at a tie, so 1 is allowed)."""
    import torch

    worst, code_diff = 0.0, None
    for key, ref in want.items():
        out = got[key]
        if out.dtype == torch.int8:
            diff = int((out.double() - ref.to(out.device, torch.float64)).abs().max())
            code_diff = max(code_diff or 0, diff)
        else:
            worst = max(worst, relative_error(out, ref))
    return {"rel_err": worst, "max_code_diff": code_diff}


def nonfinite_mismatches(got: torch.Tensor, ref: torch.Tensor) -> int:
    """Elements where the reference is NaN or ±inf and ``got`` is not the same."""
    import torch

    ref = ref.to(torch.float64)
    got = got.to(ref.device, torch.float64)
    nan_bad = torch.isnan(ref) != torch.isnan(got)
    inf_bad = torch.isinf(ref) & (got != ref)
    return int((nan_bad | inf_bad).sum())
