"""Paper §III-D's negative controls: expressible as specs, rejected by the model with a reason."""

import pytest
import torch

from smemkit.errors import InvalidArgumentError
from smemkit.reduction import BUILTIN, explain, reference
from smemkit.reduction.codegen import Variant, generate, kernel_name
from smemkit.reduction.cost_model import rejection
from smemkit.reduction.workloads import NEGATIVE_CONTROLS
from smemkit.runtime.compiler import compile_module

REASONS = {"row_sum": "one-pass", "cumsum_normalize": "scan", "median_center": "selection",
           "smooth_center": "stencil"}


@pytest.mark.parametrize("name", sorted(NEGATIVE_CONTROLS))
def test_rejected_with_the_reason(name):
    reason = rejection(NEGATIVE_CONTROLS[name])
    assert reason is not None and REASONS[name] in reason
    e = explain(name, 4096, 65536, "h200")
    assert e.rejected == reason and e.verdict is None


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtins_are_not_rejected(name):
    assert rejection(BUILTIN[name]) is None


@pytest.mark.parametrize("name", ["cumsum_normalize", "median_center", "smooth_center"])
def test_no_kernel_is_generated_for_them(name):
    with pytest.raises(InvalidArgumentError, match="has no kernel"):
        generate(NEGATIVE_CONTROLS[name], Variant("cluster", 8))


def test_the_one_pass_reduction_still_compiles():
    spec = NEGATIVE_CONTROLS["row_sum"]
    for variant in (Variant("reread"), Variant("cluster", 4)):
        assert compile_module(generate(spec, variant), kernel_name(spec, variant)).resources


def test_references_of_the_controls():
    x = torch.randn(3, 10, dtype=torch.float64)
    run = reference(NEGATIVE_CONTROLS["cumsum_normalize"], {"x": x}, {})["y"]
    torch.testing.assert_close(run, x.cumsum(1) / x.sum(1, keepdim=True))
    med = reference(NEGATIVE_CONTROLS["median_center"], {"x": x}, {})["y"]
    torch.testing.assert_close(med, x - x.median(1, keepdim=True).values)
    smooth = reference(NEGATIVE_CONTROLS["smooth_center"], {"x": x}, {})["y"]
    padded = torch.nn.functional.pad(x, (1, 1))
    want = (padded[:, :-2] + x + padded[:, 2:]) / 3 - x.mean(1, keepdim=True)
    torch.testing.assert_close(smooth, want)
    total = reference(NEGATIVE_CONTROLS["row_sum"], {"x": x}, {})["total_out"]
    torch.testing.assert_close(total, x.sum(1))
