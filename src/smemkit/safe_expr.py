"""Small expression languages written as Python syntax and run without ``eval``: their shared core.

Two parts take expressions as strings: a reduction spec's per-element and per-row formulas
(float32 CUDA C and float64 torch tensors, :mod:`smemkit.reduction.expr`) and a tiling pattern's
index expressions and predicates (per-thread integers, and C++ for the microkernels,
:mod:`smemkit.tiling.expr`). Their grammars differ (powers, ``/`` and math functions on tensors,
where and/or combine whole tensors; integer ``//``, ``%`` and bit operations, where and/or
short-circuit), so each part keeps its own node set and the meaning of each node. What they share
is here: :class:`Grammar` parses a string into a tree and refuses, before anything runs, every node
outside the part's set (an :class:`~smemkit.errors.InvalidArgumentError` naming it), and
:class:`Walker` visits a checked tree by node type and resolves its names.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError


def _no_rules(node: ast.AST, text: str) -> None:
    return None


@dataclass(frozen=True)
class Grammar:
    """One expression language: the node types it admits and its rules on them.

    ``label`` names an expression in messages ("expression", "index expression"); ``refuse``
    gives the message for a node of a type outside ``nodes``; ``rules`` raises
    InvalidArgumentError for an admitted node that breaks a further rule (a call to an unknown
    function, a constant of the wrong kind).
    """

    label: str
    nodes: tuple[type, ...]
    refuse: Callable[[ast.AST, str], str]
    rules: Callable[[ast.AST, str], None] = _no_rules

    def parse(self, text: str) -> ast.Expression:
        """The checked tree of ``text`` (mode ``eval``). Nodes are checked in :func:`ast.walk`
        order, each against its type and then ``rules``, so the first offending node is named."""
        try:
            tree = ast.parse(text, mode="eval")
        except SyntaxError as exc:
            raise InvalidArgumentError(f"{self.label} {text!r} is not valid syntax: {exc.msg}") from exc
        for node in ast.walk(tree.body):
            if not isinstance(node, self.nodes):
                raise InvalidArgumentError(self.refuse(node, text))
            self.rules(node, text)
        return tree


class Walker:
    """Visits a tree a :class:`Grammar` checked: :meth:`visit` calls ``on_<NodeType>(node)``.

    A subclass defines the handlers of its language (a value, or C text, per node); names are
    looked up in ``env`` (:meth:`on_Name`, :meth:`unknown_name` for the message). A node without a
    handler is an InvalidArgumentError naming it (a grammar that admits it has no meaning for it).
    """

    label = "expression"

    def __init__(self, text: str, env: Mapping[str, object] | None = None) -> None:
        self.text = text
        self.env = {} if env is None else env

    def visit(self, node: ast.AST):
        handler = getattr(self, f"on_{type(node).__name__}", None)
        if handler is None:
            raise InvalidArgumentError(f"{self.label} {self.text!r}: {type(node).__name__} is not "
                                       "supported here")
        return handler(node)

    def on_Name(self, node: ast.Name):
        if node.id not in self.env:
            raise InvalidArgumentError(self.unknown_name(node.id))
        return self.env[node.id]

    def unknown_name(self, name: str) -> str:
        return f"{self.label} {self.text!r} uses unknown name {name!r}"
