"""The float64 torch back end of :mod:`smemkit.reduction.expr` (the reference's evaluator).

Kept apart so that parsing an expression and generating its CUDA (what the cost model and
``smemkit advise`` do) never import torch.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

import torch

from smemkit.safe_expr import Walker


def evaluate_tree(text: str, tree: ast.expr, env: Mapping[str, object],
                  functions: Mapping[str, str | None]) -> torch.Tensor:
    """``tree`` (``text`` parsed and checked) on float64 tensors or numbers from ``env``;
    ``functions`` maps each call's name to the torch function that computes it (expr.FUNCTIONS)."""
    walker = _Torch(text, env)
    walker.functions = functions
    return torch.as_tensor(walker.visit(tree), dtype=torch.float64)


_TORCH_CMP = {ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y, ast.Lt: lambda x, y: x < y,
              ast.LtE: lambda x, y: x <= y, ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y}


class _Torch(Walker):
    """The value of each node on float64 tensors (or Python numbers) from ``env``: every operand
    is evaluated (and/or, comparisons and ``if`` combine whole tensors)."""

    functions: Mapping[str, str | None] = {}

    def on_Constant(self, node: ast.Constant) -> float:
        return float(node.value)

    def on_UnaryOp(self, node: ast.UnaryOp):
        v = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return torch.logical_not(torch.as_tensor(v))
        return -v if isinstance(node.op, ast.USub) else v

    def on_BinOp(self, node: ast.BinOp):
        a, b = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.Pow):
            return a**b
        return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b,
                ast.Div: _divide(a, b)}[type(node.op)]

    def on_Compare(self, node: ast.Compare):
        result = None
        left = self.visit(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=False):
            right = self.visit(right_node)
            part = torch.as_tensor(_TORCH_CMP[type(op)](left, right))
            result = part if result is None else torch.logical_and(result, part)
            left = right
        return result

    def on_BoolOp(self, node: ast.BoolOp):
        values = [torch.as_tensor(self.visit(v)) for v in node.values]
        combine = torch.logical_and if isinstance(node.op, ast.And) else torch.logical_or
        out = values[0]
        for v in values[1:]:
            out = combine(out, v)
        return out

    def on_IfExp(self, node: ast.IfExp):
        cond = torch.as_tensor(self.visit(node.test))
        body, other = self.visit(node.body), self.visit(node.orelse)
        return torch.where(cond, torch.as_tensor(body, dtype=torch.float64),
                           torch.as_tensor(other, dtype=torch.float64))

    def on_Call(self, node: ast.Call):
        if node.func.id == "shift":
            return _shift(torch.as_tensor(self.visit(node.args[0]), dtype=torch.float64),
                          int(self.visit(node.args[1])))
        fn = getattr(torch, self.functions[node.func.id])
        args = [torch.as_tensor(self.visit(a), dtype=torch.float64) for a in node.args]
        return fn(*args)


def _shift(x: torch.Tensor, k: int) -> torch.Tensor:
    """Column i of the result is column i + k of x, zero where that falls outside the row."""
    out = torch.zeros_like(x)
    n = x.shape[-1]
    if abs(k) < n:
        if k >= 0:
            out[..., : n - k] = x[..., k:]
        else:
            out[..., -k:] = x[..., : n + k]
    return out


def _divide(a, b):
    """IEEE division for tensors and numbers alike (x/0 -> inf or NaN, never an exception)."""
    return torch.as_tensor(a, dtype=torch.float64) / torch.as_tensor(b, dtype=torch.float64)
