"""Per-element and per-row expressions of a workload spec, written once as Python syntax.

One expression string serves both back ends: :func:`to_cuda` emits float32 CUDA C, and
:func:`evaluate` computes it on float64 torch tensors for the reference (both walk the tree
:func:`parse` checked, with :mod:`smemkit.safe_expr`'s walker). The language is small
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
from smemkit.safe_expr import Grammar, Walker

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


def _rules(node: ast.AST, text: str) -> None:
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


GRAMMAR = Grammar(
    "expression",
    (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Call, ast.Name, ast.Constant, ast.Load,
     ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or, ast.Pow, *_BINOPS, *_CMPOPS),
    lambda node, text: f"expression {text!r} uses {type(node).__name__}, which specs do not allow",
    _rules,
)


@cache
def parse(text: str) -> ast.expr:
    """Parse and validate an expression; raises InvalidArgumentError naming what is not allowed."""
    return GRAMMAR.parse(text).body


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


class _Cuda(Walker):
    """float32 CUDA C text of each node; names renamed by ``env`` (unknown ones kept)."""

    def on_Constant(self, node: ast.Constant) -> str:
        return _c_number(node.value)

    def on_Name(self, node: ast.Name) -> str:
        return self.env.get(node.id, node.id)

    def on_UnaryOp(self, node: ast.UnaryOp) -> str:
        op = {ast.USub: "-", ast.UAdd: "+", ast.Not: "!"}[type(node.op)]
        return f"({op}{self.visit(node.operand)})"

    def on_BinOp(self, node: ast.BinOp) -> str:
        if isinstance(node.op, ast.Pow):
            base = self.visit(node.left)
            return f"({' * '.join([base] * int(node.right.value))})"
        return f"({self.visit(node.left)} {_BINOPS[type(node.op)]} {self.visit(node.right)})"

    def on_Compare(self, node: ast.Compare) -> str:
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=False):
            parts.append(f"({self.visit(left)} {_CMPOPS[type(op)]} {self.visit(right)})")
            left = right
        return "(" + " && ".join(parts) + ")"

    def on_BoolOp(self, node: ast.BoolOp) -> str:
        joiner = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joiner.join(self.visit(v) for v in node.values) + ")"

    def on_IfExp(self, node: ast.IfExp) -> str:
        return f"({self.visit(node.test)} ? {self.visit(node.body)} : {self.visit(node.orelse)})"

    def on_Call(self, node: ast.Call) -> str:
        spelling = FUNCTIONS[node.func.id][0]
        if not spelling:
            raise InvalidArgumentError(f"{node.func.id}() in {self.text!r} has no kernel spelling")
        return f"{spelling}({', '.join(self.visit(a) for a in node.args)})"


def to_cuda(text: str, rename: Mapping[str, str] | None = None) -> str:
    """float32 CUDA C for an expression; ``rename`` maps spec names to C identifiers."""
    return _Cuda(text, rename or {}).visit(parse(text))


def evaluate(text: str, env: Mapping[str, object]) -> torch.Tensor:
    """Evaluate on float64 tensors (or Python numbers) from ``env``; used by the reference."""
    from smemkit.reduction.expr_torch import evaluate_tree

    return evaluate_tree(text, parse(text), env, {name: f[1] for name, f in FUNCTIONS.items()})


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
