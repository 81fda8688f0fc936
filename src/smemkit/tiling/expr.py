"""Small integer expressions for per-thread indices and predicates, evaluated without ``eval``.

Pattern files written as JSON carry index expressions as strings such as ``"ty + 8*i, tx"`` or
``"lane ^ (warp % 4)"``. They are parsed once with :mod:`ast` and interpreted by walking the tree,
so only integer arithmetic on the named variables can run: no attribute access, calls (except
``min``/``max``/``abs``), subscripts or imports. Allowed: integer constants, names, ``+ - * // %
<< >> & | ^ ~``, unary ``-``, comparisons, ``and``/``or``/``not``, ``a if c else b``, tuples.
``/`` is rejected on purpose: C integer division truncates, so write ``//`` (variables here are
never negative, where the two agree).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from functools import cache

from smemkit.errors import InvalidArgumentError

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


@cache
def parse(text: str) -> ast.Expression:
    """Parse and check an expression; InvalidArgumentError names the construct that is not allowed."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(f"index expression {text!r}: must be a non-empty string")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise InvalidArgumentError(f"index expression {text!r} is not valid syntax: {exc.msg}") from exc
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            what = "'/' (use '//')" if isinstance(node, ast.Div) else type(node).__name__
            raise InvalidArgumentError(
                f"index expression {text!r} uses {what}; allowed: integers, variable names, "
                "+ - * // % << >> & | ^ ~, comparisons, and/or/not, 'a if c else b', min/max/abs"
            )
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
    return tree


def evaluate(text: str, env: Mapping[str, int]) -> int | bool | tuple:
    """Value of ``text`` with the variables in ``env``; unknown names raise InvalidArgumentError."""
    return _eval(parse(text).body, env, text)


def _eval(node: ast.expr, env: Mapping[str, int], text: str):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise InvalidArgumentError(f"index expression {text!r} reads {node.id!r}; known "
                                       f"variables: {', '.join(sorted(env))}")
        return env[node.id]
    if isinstance(node, ast.Tuple):
        return tuple(_eval(e, env, text) for e in node.elts)
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, env, text), _eval(node.right, env, text)
        if isinstance(node.op, ast.LShift) and isinstance(right, int) and right > 62:
            raise InvalidArgumentError(f"index expression {text!r}: shift by {right} is out of range")
        try:
            return _BINOPS[type(node.op)](left, right)
        except (ZeroDivisionError, ValueError) as exc:
            raise InvalidArgumentError(f"index expression {text!r}: {exc} at {env}") from exc
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env, text)
        if isinstance(node.op, ast.Not):
            return not value
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[
            type(node.op)](value)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env, text)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env, text)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_eval(v, env, text) for v in node.values)
        return any(_eval(v, env, text) for v in node.values)
    if isinstance(node, ast.IfExp):
        branch = node.body if _eval(node.test, env, text) else node.orelse
        return _eval(branch, env, text)
    if isinstance(node, ast.Call):
        return _FUNCS[node.func.id](*(_eval(a, env, text) for a in node.args))
    raise InvalidArgumentError(f"index expression {text!r}: unsupported node {type(node).__name__}")
