"""Generated kernels: every variant of every built-in compiles for sm_90a without spills."""

import pytest

from smemkit.reduction import BUILTIN
from smemkit.reduction.codegen import Variant, generate, kernel_name
from smemkit.reduction.kernels import CLUSTER_SIZES, legality
from smemkit.runtime.compiler import compile_module

VARIANTS = [Variant("staged"), Variant("reread")] + [Variant("cluster", P) for P in CLUSTER_SIZES]
H200_SMEM = 232448


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.label)
@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_variant_compiles_without_spills(name, variant):
    source = generate(BUILTIN[name], variant)
    module = compile_module(source, kernel_name(BUILTIN[name], variant), arch="sm_90a")
    usage = module.resources[kernel_name(BUILTIN[name], variant)]
    assert not usage.spills and usage.stack_bytes == 0, usage


def test_generated_source_is_readable():
    src = generate(BUILTIN["layernorm_bwd"], Variant("cluster", 8))
    assert "// stage 1: sum_x = sum(x)" in src
    assert "const float mu = (sum_x / Nf);" in src
    assert "st_async_f32" in src and "cluster.sync" not in src


def test_legality_follows_eq3():
    ln = BUILTIN["layernorm_bwd"]  # keeps x and dy: 8 B per element
    assert legality(ln, Variant("staged"), 16384, H200_SMEM, 16) is None
    assert "above the" in legality(ln, Variant("staged"), 65536, H200_SMEM, 16)
    assert legality(ln, Variant("cluster", 2), 65536, H200_SMEM, 16) is not None  # 256 KB
    assert legality(ln, Variant("cluster", 4), 65536, H200_SMEM, 16) is None  # 128 KB
    assert legality(ln, Variant("reread"), 1 << 24, H200_SMEM, 16) is None
    assert "maximum" in legality(ln, Variant("cluster", 16), 65536, H200_SMEM, 8)
