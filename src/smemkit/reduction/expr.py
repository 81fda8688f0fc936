"""Per-element and per-row expressions of a workload spec, written once as Python syntax.

One expression string serves both back ends: :func:`to_cuda` emits float32 CUDA C, and
:func:`evaluate` computes it on float64 torch tensors for the reference. The language is small
on purpose: numbers, names, ``+ - * / **`` (integer powers), comparisons, ``and``/``or``/``not``,
``a if cond else b`` and the functions in :data:`FUNCTIONS`. ``max``/``min`` propagate NaN the
way torch does, so kernels and reference agree on rows that contain NaN.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING

from smemkit.errors import InvalidArgumentError

if TYPE_CHECKING:
    import torch

# name -> (CUDA spelling, name of the torch function, number of arguments); torch by name, so
# parsing and CUDA generation (the cost model's path) need no torch
FUNCTIONS: dict[str, tuple[str, str | None, int]] = {
    "sqrt": ("sqrtf", "sqrt", 1),
    "rsqrt": ("rsqrt_ieee", "rsqrt", 1),
    "exp": ("expf", "exp", 1),
    "log": ("logf", "log", 1),
    "abs": ("fabsf", "abs", 1),
    "round": ("rintf", "round", 1),  # both round half to even
    "max": ("nan_max", "maximum", 2),
    "min": ("nan_min", "minimum", 2),
    "isnan": ("isnan", "isnan", 1),
    # shift(x, k) = x at column i + k (0 past the row's ends): a stencil, reference-only
    "shift": ("", None, 2),
}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_CMPOPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}


@cache
def parse(text: str) -> ast.expr:
    """Parse and validate an expression; raises InvalidArgumentError naming what is not allowed."""
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise InvalidArgumentError(f"expression {text!r} is not valid syntax: {exc.msg}") from exc
    for node in ast.walk(tree):
        allowed = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Call, ast.Name,
                   ast.Constant, ast.Load, ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
                   ast.Pow, *(_BINOPS), *(_CMPOPS))
        if not isinstance(node, allowed):
            raise InvalidArgumentError(
                f"expression {text!r} uses {type(node).__name__}, which specs do not allow"
            )
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise InvalidArgumentError(
                    f"expression {text!r} calls an unknown function; allowed: {', '.join(FUNCTIONS)}"
                )
            if len(node.args) != FUNCTIONS[node.func.id][2] or node.keywords:
                raise InvalidArgumentError(f"{node.func.id}() in {text!r} takes "
                                           f"{FUNCTIONS[node.func.id][2]} argument(s)")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not (
            isinstance(node.right, ast.Constant) and node.right.value in (2, 3)
        ):
            raise InvalidArgumentError(f"only the powers 2 and 3 are allowed, in {text!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
            raise InvalidArgumentError(f"constant {node.value!r} in {text!r} is not a number")
    return tree


def called(text: str) -> set[str]:
    """Functions an expression calls."""
    return {n.func.id for n in ast.walk(parse(text)) if isinstance(n, ast.Call)}


def names(text: str) -> set[str]:
    """Free names an expression refers to (function names excluded)."""
    tree = parse(text)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def _c_number(value: float) -> str:
    if isinstance(value, bool):
        return "1.0f" if value else "0.0f"
    return f"{float(value)!r}f".replace("inff", "__int_as_float(0x7f800000)")


def to_cuda(text: str, rename: Mapping[str, str] | None = None) -> str:
    """float32 CUDA C for an expression; ``rename`` maps spec names to C identifiers."""
    rename = rename or {}

    def emit(node: ast.expr) -> str:
        if isinstance(node, ast.Constant):
            return _c_number(node.value)
        if isinstance(node, ast.Name):
            return rename.get(node.id, node.id)
        if isinstance(node, ast.UnaryOp):
            op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!"}[type(node.op)]
            return f"({op}{emit(node.operand)})"
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Pow):
                base = emit(node.left)
                return f"({' * '.join([base] * int(node.right.value))})"
            return f"({emit(node.left)} {_BINOPS[type(node.op)]} {emit(node.right)})"
        if isinstance(node, ast.Compare):
            parts = []
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=False):
                parts.append(f"({emit(left)} {_CMPOPS[type(op)]} {emit(right)})")
                left = right
            return "(" + " && ".join(parts) + ")"
        if isinstance(node, ast.BoolOp):
            joiner = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + joiner.join(emit(v) for v in node.values) + ")"
        if isinstance(node, ast.IfExp):
            return f"({emit(node.test)} ? {emit(node.body)} : {emit(node.orelse)})"
        if isinstance(node, ast.Call):
            spelling = FUNCTIONS[node.func.id][0]
            if not spelling:
                raise InvalidArgumentError(f"{node.func.id}() in {text!r} has no kernel spelling")
            return f"{spelling}({', '.join(emit(a) for a in node.args)})"
        raise AssertionError(type(node))  # parse() admits nothing else

    return emit(parse(text))


def evaluate(text: str, env: Mapping[str, object]) -> torch.Tensor:
    """Evaluate on float64 tensors (or Python numbers) from ``env``; used by the reference."""
    import torch

    def ev(node: ast.expr):
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise InvalidArgumentError(f"expression {text!r} uses unknown name {node.id!r}")
            return env[node.id]
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.Not):
                return torch.logical_not(torch.as_tensor(v))
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow):
                return a**b
            return {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b,
                    ast.Div: _divide(a, b)}[type(node.op)]
        if isinstance(node, ast.Compare):
            result = None
            left = ev(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=False):
                right = ev(right_node)
                part = {ast.Gt: lambda x, y: x > y, ast.GtE: lambda x, y: x >= y,
                        ast.Lt: lambda x, y: x < y, ast.LtE: lambda x, y: x <= y,
                        ast.Eq: lambda x, y: x == y, ast.NotEq: lambda x, y: x != y}[type(op)](left, right)
                part = torch.as_tensor(part)
                result = part if result is None else torch.logical_and(result, part)
                left = right
            return result
        if isinstance(node, ast.BoolOp):
            values = [torch.as_tensor(ev(v)) for v in node.values]
            combine = torch.logical_and if isinstance(node.op, ast.And) else torch.logical_or
            out = values[0]
            for v in values[1:]:
                out = combine(out, v)
            return out
        if isinstance(node, ast.IfExp):
            cond = torch.as_tensor(ev(node.test))
            body, other = ev(node.body), ev(node.orelse)
            return torch.where(cond, torch.as_tensor(body, dtype=torch.float64),
                               torch.as_tensor(other, dtype=torch.float64))
        if isinstance(node, ast.Call):
            if node.func.id == "shift":
                return _shift(torch.as_tensor(ev(node.args[0]), dtype=torch.float64),
                              int(ev(node.args[1])))
            fn = getattr(torch, FUNCTIONS[node.func.id][1])
            args = [torch.as_tensor(ev(a), dtype=torch.float64) for a in node.args]
            return fn(*args)
        raise AssertionError(type(node))

    return torch.as_tensor(ev(parse(text)), dtype=torch.float64)


def _shift(x: torch.Tensor, k: int) -> torch.Tensor:
    """Column i of the result is column i + k of x, zero where that falls outside the row."""
    import torch

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
    import torch

    return torch.as_tensor(a, dtype=torch.float64) / torch.as_tensor(b, dtype=torch.float64)


def hoist_row_divisions(text: str, row_names: set[str], counter: list[int],
                        hoisted: dict[str, str]) -> str:
    """Rewrite ``a / d`` as ``a * _rcpK`` where ``d`` uses only per-row names.

    A division per element costs about ten instructions, a multiply one; the reciprocal is
    computed once per row (``hoisted`` maps its name to the denominator text). IEEE special
    cases agree: x * (1/0) and x / 0 are both ±inf (NaN for x = 0), likewise for inf and NaN.
    The result is rounded twice (the reciprocal, then the product), so it can differ from true
    division in the last bit, and 1/d under- or overflows for |d| beyond about 2**126.
    """

    class Hoist(ast.NodeTransformer):
        def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
            self.generic_visit(node)
            if not isinstance(node.op, ast.Div):
                return node
            denominator = ast.unparse(node.right)
            if isinstance(node.right, ast.Constant) or not names(denominator) <= row_names:
                return node
            existing = [k for k, v in hoisted.items() if v == denominator]
            if existing:
                name = existing[0]
            else:
                name = f"_rcp{counter[0]}"
                counter[0] += 1
                hoisted[name] = denominator
            return ast.BinOp(left=node.left, op=ast.Mult(), right=ast.Name(id=name, ctx=ast.Load()))

    tree = Hoist().visit(ast.parse(text, mode="eval"))
    return ast.unparse(tree)
