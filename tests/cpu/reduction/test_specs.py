"""The spec DSL: validation, byte accounting, and its float64 reference against SPEC §1."""

import pytest
import torch
from handwritten_reference import HANDWRITTEN, make_inputs

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import BUILTIN, Output, ReductionSpec, Stage, Stat, reference
from smemkit.reduction.reference import nonfinite_mismatches, output_errors, relative_error


@pytest.mark.parametrize("name", sorted(BUILTIN))
@pytest.mark.parametrize("M,N", [(3, 1), (4, 31), (5, 1000), (2, 4097)])
def test_spec_reference_matches_handwritten(name, M, N):
    gen = torch.Generator().manual_seed(hash((name, M, N)) % 2**31)
    tensors, scalars = make_inputs(name, M, N, generator=gen)
    got = reference(BUILTIN[name], tensors, scalars)
    want = HANDWRITTEN[name](tensors, scalars)
    for key, ref in want.items():
        assert relative_error(got[key], ref) < 1e-12, key
        assert nonfinite_mismatches(got[key], ref) == 0, key


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_zero_inf_nan_rows_match_handwritten(name):
    tensors, scalars = make_inputs(name, 4, 64, generator=torch.Generator().manual_seed(1))
    first = BUILTIN[name].inputs[0]
    for n in BUILTIN[name].inputs:
        tensors[n][0] = 0.0
    tensors[first][1, 7] = float("nan")
    tensors[first][2, 3] = float("inf")
    got = reference(BUILTIN[name], tensors, scalars)
    want = HANDWRITTEN[name](tensors, scalars)
    for key, ref in want.items():
        assert nonfinite_mismatches(got[key], ref) == 0, key
        assert relative_error(got[key], ref) < 1e-12, key


EXPECTED_BYTES = {  # compulsory, keep, baseline (one pass per stage + output pass)
    "layernorm_bwd": (12, 8, 24),
    "wvar_bwd": (16, 12, 36),
    "pearson_bwd": (16, 8, 32),
    "softmax_bwd": (12, 8, 24),
    "lars": (20, 8, 28),
    "quant_int8": (5, 4, 9),
}


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_byte_accounting(name):
    b = BUILTIN[name].bytes
    assert (b.compulsory, b.keep, b.baseline) == EXPECTED_BYTES[name]
    assert b.reread == b.baseline - b.compulsory
    assert b.stages == len(BUILTIN[name].stages)


def test_compulsory_bytes_match_spec_table():
    # SPEC §1 table, "compulsory B/elem"
    spec_table = {"layernorm_bwd": 12, "wvar_bwd": 16, "pearson_bwd": 16, "softmax_bwd": 12,
                  "lars": 20, "quant_int8": 5}
    assert {n: s.bytes.compulsory for n, s in BUILTIN.items()} == spec_table


def _spec(**kw):
    base = dict(name="t", inputs=("x",), stages=(Stage((Stat("s", "sum", "x"),)),),
                outputs=(Output("y", "x - s"),))
    base.update(kw)
    return ReductionSpec(**base)


@pytest.mark.parametrize("kw,match", [
    ({"outputs": (Output("y", "x - unknown"),)}, "unknown"),
    ({"stages": (Stage((Stat("s", "sum", "x * later"),)), Stage((Stat("later", "sum", "x"),)))},
     "later"),
    ({"stages": (Stage((Stat("s", "mean", "x"),)),)}, "allowed: sum, max, min"),
    ({"inputs": ("x", "x")}, "more than once"),
    ({"inputs": ("_x",)}, "reserved"),
    ({"outputs": (Output("y", "x.real"),)}, "Attribute"),
    ({"outputs": (Output("y", "foo(x)"),)}, "unknown function"),
    ({"outputs": (Output("y", "x ** 5"),)}, "powers"),
    ({"outputs": (Output("y", "x", dtype="bf16"),)}, "dtype"),
])
def test_invalid_specs_are_rejected_with_the_reason(kw, match):
    with pytest.raises(InvalidArgumentError, match=match):
        _spec(**kw)


@pytest.mark.parametrize("name", ["M", "P", "red", "acc0_1", "float", "threadIdx"])
def test_names_the_generated_code_uses_are_reserved(name):
    with pytest.raises(InvalidArgumentError, match="reserved"):
        _spec(inputs=(name,), stages=(Stage((Stat("s", "sum", name),)),),
              outputs=(Output("y", f"{name} - s"),))


def test_output_errors_floats_and_int8_codes():
    """The benchmarks' correctness measure: worst float error, largest int8 code difference; a
    poisoned (skipped) output shows as an infinite error or a code far off."""
    torch.manual_seed(0)
    want = {"y": torch.randn(5, 7, dtype=torch.float64), "scale": torch.rand(5, dtype=torch.float64) + 0.5,
            "q": torch.randint(-127, 128, (5, 7)).double()}
    got = {"y": want["y"].float(), "scale": want["scale"].float(), "q": want["q"].to(torch.int8)}
    errors = output_errors(got, want)
    assert errors["rel_err"] < 1e-7 and errors["max_code_diff"] == 0
    got["q"] = (want["q"] + torch.where(want["q"] < 127, 1.0, -1.0)).to(torch.int8)  # every code 1 off
    assert output_errors(got, want)["max_code_diff"] == 1
    got["q"] = torch.full((5, 7), -128, dtype=torch.int8)  # poison left in place
    assert output_errors(got, want)["max_code_diff"] == int((want["q"] + 128).max())
    got["y"] = torch.full((5, 7), float("nan"))
    assert output_errors(got, want)["rel_err"] == float("inf")
    assert output_errors({"y": want["y"]}, {"y": want["y"]}) == {"rel_err": 0.0, "max_code_diff": None}
