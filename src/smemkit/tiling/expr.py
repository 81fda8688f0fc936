"""Small integer expressions for per-thread indices and predicates, evaluated without ``eval``.

Pattern files written as JSON carry index expressions as strings such as ``"ty + 8*i, tx"`` or
``"lane ^ (warp % 4)"``. They are parsed once with :mod:`ast` and interpreted by walking the tree,
so only integer arithmetic on the named variables can run: no attribute access, calls (except
``min``/``max``/``abs``), subscripts or imports. Allowed: integer constants, names, ``+ - * // %
<< >> & | ^ ~``, unary ``-``, comparisons, ``and``/``or``/``not``, ``a if c else b``, tuples.
``/`` is rejected on purpose: C integer division truncates, so write ``//`` (variables here are
never negative, where the two agree). :func:`to_c` writes the same expression as C++ with Python's
semantics (the microkernels compute their addresses with it). Parsing and the tree walk are
:mod:`smemkit.safe_expr`'s, shared with the reduction specs' float expressions.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping, Sequence
from functools import cache

from smemkit.errors import InvalidArgumentError
from smemkit.safe_expr import Grammar, Walker

_BINOPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_CMPOPS: dict[type, Callable[[int, int], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}
_FUNCS: dict[str, Callable[..., int]] = {"min": min, "max": max, "abs": abs}
_ALLOWED = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Name,
            ast.Constant, ast.Load, ast.Tuple, ast.Call, ast.USub, ast.UAdd, ast.Invert, ast.Not,
            ast.And, ast.Or, *_BINOPS, *_CMPOPS)


def _refuse(node: ast.AST, text: str) -> str:
    what = "'/' (use '//')" if isinstance(node, ast.Div) else type(node).__name__
    return (f"index expression {text!r} uses {what}; allowed: integers, variable names, "
            "+ - * // % << >> & | ^ ~, comparisons, and/or/not, 'a if c else b', min/max/abs")


def _rules(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.Constant) and (isinstance(node.value, bool)
                                           or not isinstance(node.value, int)):
        raise InvalidArgumentError(f"constant {node.value!r} in {text!r}: only integers are allowed")
    if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name)
                                       or node.func.id not in _FUNCS or node.keywords):
        raise InvalidArgumentError(f"index expression {text!r}: only min(), max() and abs() "
                                   "may be called, with positional arguments")
    if isinstance(node, ast.Call) and (len(node.args) != 1 if node.func.id == "abs"
                                       else len(node.args) < 2):
        raise InvalidArgumentError(f"index expression {text!r}: abs() takes one argument, "
                                   "min() and max() two or more")
    if isinstance(node, (ast.BinOp, ast.UnaryOp)) and any(
            isinstance(child, ast.Tuple) for child in ast.iter_child_nodes(node)):
        raise InvalidArgumentError(f"index expression {text!r}: a tuple cannot be an operand")


GRAMMAR = Grammar("index expression", _ALLOWED, _refuse, _rules)


@cache
def parse(text: str) -> ast.Expression:
    """Parse and check an expression; InvalidArgumentError names the construct that is not allowed."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"index expression {text!r}: must be a non-empty string")
    return GRAMMAR.parse(text.strip())


class _IndexWalker(Walker):
    label = "index expression"

    def unknown_name(self, name: str) -> str:
        return (f"index expression {self.text!r} reads {name!r}; known "
                f"variables: {', '.join(sorted(self.env))}")


class _Index(_IndexWalker):
    """The integer (or bool, or tuple) value of each node; and/or, comparisons and ``if``
    short-circuit as in Python."""

    def on_Constant(self, node: ast.Constant):
        return node.value

    def on_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.visit(e) for e in node.elts)

    def on_BinOp(self, node: ast.BinOp):
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.LShift) and isinstance(right, int) and right > 62:
            raise InvalidArgumentError(f"index expression {self.text!r}: shift by {right} is out of range")
        try:
            return _BINOPS[type(node.op)](left, right)
        except (ZeroDivisionError, ValueError) as exc:
            raise InvalidArgumentError(f"index expression {self.text!r}: {exc} at {self.env}") from exc

    def on_UnaryOp(self, node: ast.UnaryOp):
        value = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return not value
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[
            type(node.op)](value)

    def on_Compare(self, node: ast.Compare) -> bool:
        left = self.visit(node.left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = self.visit(comp)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True

    def on_BoolOp(self, node: ast.BoolOp) -> bool:
        if isinstance(node.op, ast.And):
            return all(self.visit(v) for v in node.values)
        return any(self.visit(v) for v in node.values)

    def on_IfExp(self, node: ast.IfExp):
        return self.visit(node.body if self.visit(node.test) else node.orelse)

    def on_Call(self, node: ast.Call):
        return _FUNCS[node.func.id](*(self.visit(a) for a in node.args))


def evaluate(text: str, env: Mapping[str, int]) -> int | bool | tuple:
    """Value of ``text`` with the variables in ``env``; unknown names raise InvalidArgumentError."""
    return _Index(text, env).visit(parse(text).body)


_C_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.LShift: "<<", ast.RShift: ">>",
             ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_C_CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


def c_name(name: str) -> str:
    """The C++ variable that holds the pattern variable ``name``."""
    return f"v_{name}"


class _Cpp(_IndexWalker):
    """C++ text of each node with Python's integer semantics (``smk_floordiv``/``smk_mod``/
    ``smk_min``... of the microkernels' prelude); ``env`` holds the known variable names."""

    def on_Name(self, node: ast.Name) -> str:
        if node.id not in self.env:
            raise InvalidArgumentError(self.unknown_name(node.id))
        return c_name(node.id)

    def on_Constant(self, node: ast.Constant) -> str:
        return str(int(node.value))

    def on_Tuple(self, node: ast.Tuple) -> str:
        raise InvalidArgumentError(f"index expression {self.text!r}: Tuple cannot be translated to C++ here")

    def on_BinOp(self, node: ast.BinOp) -> str:
        left, right = self.visit(node.left), self.visit(node.right)
        if isinstance(node.op, ast.FloorDiv):
            return f"smk_floordiv({left}, {right})"
        if isinstance(node.op, ast.Mod):
            return f"smk_mod({left}, {right})"
        return f"({left} {_C_BINOPS[type(node.op)]} {right})"

    def on_UnaryOp(self, node: ast.UnaryOp) -> str:
        value = self.visit(node.operand)
        op = {ast.Not: "!", ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[type(node.op)]
        return f"({op}{value})"

    def on_Compare(self, node: ast.Compare) -> str:
        parts, left = [], self.visit(node.left)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = self.visit(comp)
            parts.append(f"({left} {_C_CMPOPS[type(op)]} {right})")
            left = right
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"

    def on_BoolOp(self, node: ast.BoolOp) -> str:
        # evaluate() takes and/or as all()/any(): a bool, like C's && and ||.
        joiner = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joiner.join(f"({self.visit(v)})" for v in node.values) + ")"

    def on_IfExp(self, node: ast.IfExp) -> str:
        return f"(({self.visit(node.test)}) ? {self.visit(node.body)} : {self.visit(node.orelse)})"

    def on_Call(self, node: ast.Call) -> str:
        args = [self.visit(a) for a in node.args]
        fn = node.func.id
        if fn == "abs":
            if len(args) != 1:
                raise InvalidArgumentError(f"index expression {self.text!r}: abs() takes one argument")
            return f"smk_abs({args[0]})"
        if not args:
            raise InvalidArgumentError(f"index expression {self.text!r}: {fn}() needs arguments")
        out = args[0]
        for a in args[1:]:
            out = f"smk_{fn}({out}, {a})"
        return out


def to_c(text: str, names: Sequence[str]) -> list[str]:
    """C++ expressions for a string index/predicate: one per component (a tuple gives several)."""
    body = parse(text).body
    items = body.elts if isinstance(body, ast.Tuple) else [body]
    for item in items:
        if isinstance(item, ast.Tuple):
            raise InvalidArgumentError(f"index expression {text!r}: nested tuples are not indices")
    known = dict.fromkeys(names, True)
    return [_Cpp(text, known).visit(item) for item in items]
