"""One slice-width rule: ``variant.slice_columns`` is the rule; the generated kernels' ``_cap`` and
``make_slice`` in ``smemkit/reduce_reuse.cuh`` compute it in C. Both C forms are read from their
source text, evaluated with C's integer semantics (operands positive: ``/`` truncates like ``//``)
over many (N, P, vector width) cases and compared with the Python rule, and the header's slices
are checked to tile the row."""

import re

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.reduction.codegen import generate
from smemkit.reduction.variant import (
    VECTOR_COLUMNS,
    Variant,
    cap_vectors,
    cap_vectors_c,
    slice_columns,
    slice_columns_c,
)
from smemkit.reduction.workloads import BUILTIN
from smemkit.runtime.paths import PACKAGE_INCLUDE
from smemkit.tiling import expr as int_expr

WIDTHS = [*range(1, 300), 1023, 1024, 1025, 4095, 4096, 4097, 12_000, 65_535, 65_536, 65_537, 1 << 20]
SIZES = range(1, 17)


def c_int(text: str, **env: int) -> int:
    """A C integer expression of positive ints (``/`` truncates, which for them is ``//``),
    evaluated by smemkit's safe integer evaluator."""
    return int_expr.evaluate(re.sub(r"(?<![/])/(?![/])", "//", text), env)


def header_rule() -> str:
    text = (PACKAGE_INCLUDE / "smemkit" / "reduce_reuse.cuh").read_text()
    body = re.search(r"Slice make_slice\(int row, int N, int rank, int P\) \{(.*?)\n\}", text, re.S)
    assert body, "make_slice not found in reduce_reuse.cuh"
    per = re.search(r"const int per = (.+?);", body.group(1))
    assert per, "make_slice no longer computes `per`: update this test with the rule's new form"
    # the slices are [rank * per, rank * per + per) clipped to N: what the Python rule assumes
    assert "s.lo = min(N, rank * per);" in body.group(1) and "s.hi = min(N, s.lo + per);" in body.group(1)
    return per.group(1)


def test_the_python_rule():
    for N in WIDTHS:
        for P in SIZES:
            per = slice_columns(N, P)
            assert per % VECTOR_COLUMNS == 0 and per * P >= N and (per - VECTOR_COLUMNS) * P < N
            assert cap_vectors(N, P) == per // VECTOR_COLUMNS + 1


def test_the_headers_rule_is_the_python_rule():
    rule = header_rule()
    for N in WIDTHS:
        for P in SIZES:
            assert c_int(rule, N=N, P=P) == slice_columns(N, P), (N, P, rule)


@pytest.mark.parametrize("vector", [1, 2, 4, 8, 16])
def test_the_generated_c_rule_is_the_python_rule(vector):
    rule = slice_columns_c(vector=vector)
    for N in WIDTHS:
        for P in SIZES:
            assert c_int(rule, N=N, P=P) == slice_columns(N, P, vector), (N, P, vector)


def test_the_generated_kernels_declare_cap_by_the_rule():
    for N in WIDTHS[::7]:
        for P in SIZES:
            assert c_int(cap_vectors_c(), N=N, P=P) == cap_vectors(N, P)
    spec = BUILTIN["layernorm_bwd"]
    for variant in (Variant("cluster", 8), Variant("staged"), Variant("staged", prefetch=True)):
        source = generate(spec, variant)
        assert f"  const int _cap = {cap_vectors_c()};" in source


def test_slices_tile_the_row():
    """make_slice's [lo, hi) per rank, with the header's rule: disjoint, in order, covering [0, N)."""
    rule = header_rule()
    for N in WIDTHS[::3]:
        for P in SIZES:
            per = c_int(rule, N=N, P=P)
            bounds = [(min(N, r * per), min(N, min(N, r * per) + per)) for r in range(P)]
            assert bounds[0][0] == 0 and bounds[-1][1] == N
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))


def test_c_form_needs_a_power_of_two():
    with pytest.raises(InvalidArgumentError, match="power of two"):
        slice_columns_c(vector=3)
