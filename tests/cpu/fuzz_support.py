"""What the fuzz tests share: running ``smemkit`` in-process, the property every input must
satisfy, and counting the inputs tried.

The property: any argv or file yields a result (rc 0) or one of smemkit's own errors (rc 2, a
``smemkit: error:`` line, or argparse's usage error) and never an uncaught exception. An
exception other than SystemExit escapes :func:`invoke` and fails the example with its argv.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smemkit.cli.main import main


def fuzz_settings(max_examples: int) -> settings:
    """Deterministic settings for CI: fixed examples, no deadline, no example database."""
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much,
                                           HealthCheck.function_scoped_fixture])


def invoke(argv: Sequence[str]) -> tuple[int, str, str]:
    """(rc, stdout, stderr) of ``smemkit argv`` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as done:  # argparse: usage errors (2), --help / --version (0)
            rc = done.code if isinstance(done.code, int) else (0 if done.code is None else 2)
    return rc, out.getvalue(), err.getvalue()


def check_result(argv: Sequence[str]) -> tuple[int, str, str]:
    """Run ``argv`` and assert the property; returns (rc, stdout, stderr)."""
    rc, out, err = invoke(argv)
    assert rc in (0, 2), (argv, rc, err[-500:])
    assert "Traceback" not in out and "Traceback" not in err, (argv, err[-2000:])
    if rc == 2:  # smemkit's one line, or argparse's usage and error lines
        lines = err.splitlines()
        ours = len(lines) == 1 and lines[0].startswith("smemkit: error: ")
        assert ours or (lines and lines[0].startswith("usage: smemkit") and " error: " in err), (argv, err)
    return rc, out, err


def run_fuzz(name: str, strategy: st.SearchStrategy, check: Callable[[object], int], max_examples: int,
             capsys) -> dict[int, int]:
    """Run ``check`` (returning the rc) on ``max_examples`` inputs drawn from ``strategy`` and
    report how many were tried and how many gave a result (rc 0) or an error (rc 2)."""
    outcomes = {0: 0, 2: 0}

    @fuzz_settings(max_examples)
    @given(strategy)
    def prop(value) -> None:
        outcomes[check(value)] += 1

    prop()
    with capsys.disabled():
        print(f"\nfuzz {name}: {sum(outcomes.values())} inputs, 0 tracebacks "
              f"({outcomes[0]} results, {outcomes[2]} errors)")
    return outcomes


# ---- strategies --------------------------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
INTS = st.one_of(st.integers(-3, 70_000), st.sampled_from([0, 1, 2**31 - 1, 2**31, 2**63, -(2**40)]),
                 st.integers())
FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1e-12, 0.5, 1.0, 1.5, 1e300]))
JSON_SCALARS = st.one_of(st.none(), st.booleans(), INTS, st.floats(allow_nan=False, allow_infinity=False),
                         TEXT)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=8)


NUMBERS = st.one_of(INTS, FLOATS)


def mostly(good: st.SearchStrategy, bad: st.SearchStrategy) -> st.SearchStrategy:
    """``good`` seven times in eight, else ``bad`` (one_of would lean to the last branch)."""
    return st.integers(0, 7).flatmap(lambda pick: bad if pick == 7 else good)


def number_text(good: st.SearchStrategy | None = None) -> st.SearchStrategy[str]:
    """Command-line numbers as text: seven times in eight from ``good`` (values in range, so a
    command with several of them still often gets past its checks and runs), else any number
    or text."""
    bad = st.one_of(NUMBERS.map(str), TEXT)
    return bad if good is None else mostly(good.map(str), bad)


def option(flag: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    """``[flag, value]`` or nothing."""
    return st.one_of(st.just([]), values.map(lambda v: [flag, v]))


def argv_of(*parts: st.SearchStrategy[list[str]]) -> st.SearchStrategy[list[str]]:
    return st.tuples(*parts).map(lambda groups: [a for g in groups for a in g])


def mutate_json(base: object) -> st.SearchStrategy[object]:
    """``base`` with one to three edits: a key deleted, a value replaced by any JSON value or
    scaled, an unknown key added, anywhere in the tree."""

    def paths(node, prefix=()):
        yield prefix
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, (*prefix, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, (*prefix, i))

    every = [p for p in paths(base) if p]

    def edit(doc, path, kind, value, factor):
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if kind == "delete":
            del parent[key]
        elif kind == "scale" and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = type(parent[key])(parent[key] * factor) if isinstance(parent[key], float) \
                else int(parent[key] * factor)
        elif kind == "add" and isinstance(parent, dict):
            parent[f"extra_{key}"] = value
        else:
            parent[key] = value

    one = st.tuples(st.sampled_from(every), st.sampled_from(["delete", "replace", "scale", "add"]),
                    JSON_VALUES, st.sampled_from([-1, 0, 0.5, 2, 1000, 10**12]))

    def apply(edits):
        doc = json.loads(json.dumps(base))
        for path, kind, value, factor in edits:
            with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier edit removed it
                edit(doc, path, kind, value, factor)
        return doc

    return st.lists(one, min_size=1, max_size=3).map(apply)
