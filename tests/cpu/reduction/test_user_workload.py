"""The documented seventh workload (examples/rmsnorm_bwd.py) works without touching smemkit."""

import importlib.util
from pathlib import Path

import torch

from smemkit.reduction import reference
from smemkit.reduction.codegen import Variant, generate, kernel_name
from smemkit.reduction.reference import relative_error
from smemkit.runtime.compiler import compile_module

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "rmsnorm_bwd.py"


def load_example():
    spec = importlib.util.spec_from_file_location("rmsnorm_bwd_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.RMSNORM_BWD


def test_reference_matches_the_formula():
    spec = load_example()
    gen = torch.Generator().manual_seed(7)
    x, dy = torch.randn(2, 5, 333, generator=gen, dtype=torch.float64).unbind(0)
    gamma = torch.randn(333, generator=gen, dtype=torch.float64)
    r = 1 / torch.sqrt((x * x).mean(1, keepdim=True) + 1e-5)
    g = gamma * dy
    want = r * (g - x * r * r * (g * x).mean(1, keepdim=True))
    got = reference(spec, {"x": x, "dy": dy, "gamma": gamma}, {})["dx"]
    assert relative_error(got, want) < 1e-12


def test_accounting_and_every_variant_compiles():
    spec = load_example()
    b = spec.bytes
    assert (b.compulsory, b.keep, b.baseline, b.stats_per_stage) == (12, 8, 20, (2,))
    for variant in (Variant("staged"), Variant("reread"), Variant("cluster", 8)):
        module = compile_module(generate(spec, variant), kernel_name(spec, variant))
        assert not module.resources[kernel_name(spec, variant)].spills
