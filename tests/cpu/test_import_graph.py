"""The smemkit package has no import cycles (STYLE.md: layers, with imports pointing down).

Every module under ``src/smemkit`` is parsed with :mod:`ast` (nothing is imported), and each import
of another smemkit module becomes an edge: ``import smemkit.a.b``, ``from smemkit.a import b``,
``from .b import c``, ``from . import b`` and ``from .. import b``, whether the statement sits at
module level or inside a function, a method or an ``if TYPE_CHECKING:`` block. A lazy import inside
a function still says that the module needs the other one, so a cycle through it is a cycle in the
design (STYLE.md allows a function-level import only to defer an optional or heavy dependency, never
to get around a cycle). An edge goes to the module the statement names: ``from smemkit import
errors`` is an edge to ``smemkit.errors``, ``from smemkit.errors import check_positive_int`` one to
``smemkit.errors`` too. Python also runs the parent packages' ``__init__`` on the way, but those
edges are implied by every import of a submodule and say nothing about the importing module's
layer, so a package's ``__init__`` gets an edge only where a statement names a name defined in it.
A package's ``__getattr__`` map of lazy names (``smemkit.offload._LAZY``) is a string table, not an
import statement, so it is not an edge: it re-exports downward only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "smemkit"


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package (packages as their __init__)."""
    out: dict[str, Path] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    if not base:
        raise ValueError(f"relative import beyond the top package in {module}")
    return ".".join(base + ([target] if target else []))


def imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every smemkit name an import statement anywhere in ``tree`` names: ``import a.b`` gives
    ``a.b``; ``from m import n`` gives ``m.n`` (a module, or a name defined in ``m``: the graph keeps
    the longest prefix that is a module). Statements inside functions and classes count too."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _resolve_relative(module, is_package, node.level, node.module)
            else:
                base = node.module or ""
            names.update(base if alias.name == "*" else f"{base}.{alias.name}" for alias in node.names)
    return {n for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}


def import_graph() -> dict[str, set[str]]:
    """module -> the smemkit modules it imports (self-edges dropped)."""
    files = module_files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = set()
        for name in imported_names(tree, module, path.name == "__init__.py"):
            # "from smemkit.a import b": an edge to the module smemkit.a.b if there is one, else to
            # smemkit.a (b is a name defined there)
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a sorted
    list, plus one example cycle path through each for the failure message."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def example_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, by breadth-first search."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return paths[v] + [start]
            if w not in paths:
                paths[w] = paths[v] + [w]
                queue.append(w)
    return component


def test_graph_sees_the_package() -> None:
    graph = import_graph()
    # the walker must find real edges, both module-level and inside functions
    assert "smemkit.errors" in graph["smemkit.offload.planner"]
    assert "smemkit.runtime.launch" in graph["smemkit.offload.congestion"]  # a function-level import
    assert len(graph) > 50


def test_walker_counts_every_import_form(tmp_path: Path) -> None:
    src = (
        "import smemkit.a\n"
        "from smemkit import b\n"
        "from . import c\n"
        "from .d import name\n"
        "from .. import e\n"
        "def f():\n"
        "    from smemkit.g import h\n"
    )
    names = imported_names(ast.parse(src), "smemkit.pkg.mod", is_package=False)
    assert names == {"smemkit.a", "smemkit.b", "smemkit.pkg.c", "smemkit.pkg.d.name", "smemkit.e",
                     "smemkit.g.h"}


def test_find_cycles_reports_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert example_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_no_import_cycles() -> None:
    graph = import_graph()
    cycles = find_cycles(graph)
    if cycles:
        lines = [" -> ".join(example_cycle(graph, c)) + f"   (component: {', '.join(c)})" for c in cycles]
        pytest.fail("import cycles in smemkit:\n" + "\n".join(lines))
