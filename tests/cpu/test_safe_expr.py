"""The expression core both expression languages stand on (smemkit.safe_expr): a grammar refuses
what it does not admit before anything runs, and the walker dispatches by node type."""

import ast

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import expr as float_expr
from smemkit.safe_expr import Grammar, Walker
from smemkit.tiling import expr as int_expr

ADD_ONLY = Grammar("sum", (ast.BinOp, ast.Add, ast.Name, ast.Constant, ast.Load),
                   lambda node, text: f"sum {text!r} uses {type(node).__name__}",
                   lambda node, text: _one_digit(node, text))


def _one_digit(node, text):
    if isinstance(node, ast.Constant) and not 0 <= node.value <= 9:
        raise InvalidArgumentError(f"constant {node.value} in {text!r} is not one digit")


class Summer(Walker):
    label = "sum"

    def on_Constant(self, node):
        return node.value

    def on_BinOp(self, node):
        return self.visit(node.left) + self.visit(node.right)


def test_grammar_admits_its_nodes_and_applies_its_rules():
    tree = ADD_ONLY.parse("a + 2 + b")
    assert Summer("a + 2 + b", {"a": 1, "b": 3}).visit(tree.body) == 6
    with pytest.raises(InvalidArgumentError, match="uses Mult"):
        ADD_ONLY.parse("a * 2")
    with pytest.raises(InvalidArgumentError, match="not valid syntax"):
        ADD_ONLY.parse("a +")
    with pytest.raises(InvalidArgumentError, match="constant 12 .* not one digit"):
        ADD_ONLY.parse("a + 12")
    with pytest.raises(InvalidArgumentError, match="uses UnaryOp"):
        ADD_ONLY.parse("-12 + a")  # the UnaryOp above the constant is met first (ast.walk order)
    with pytest.raises(InvalidArgumentError, match="uses unknown name 'c'"):
        Summer("c + 1", {}).visit(ADD_ONLY.parse("c + 1").body)


def test_walker_names_a_node_it_has_no_meaning_for():
    tree = ast.parse("-a", mode="eval")  # a tree no grammar checked
    with pytest.raises(InvalidArgumentError, match="UnaryOp is not supported"):
        Summer("-a", {"a": 1}).visit(tree.body)


def test_both_languages_use_the_core():
    assert isinstance(float_expr.GRAMMAR, Grammar) and isinstance(int_expr.GRAMMAR, Grammar)
    # the same text means different things: float division vs a refused '/'
    assert float(float_expr.evaluate("a / 4", {"a": 6.0})) == 1.5
    with pytest.raises(InvalidArgumentError, match="use '//'"):
        int_expr.parse("a / 4")
    # and/or: tensors combined whole in one, Python short-circuit in the other
    assert int_expr.evaluate("ty != 0 and tx // ty", {"tx": 3, "ty": 0}) is False
