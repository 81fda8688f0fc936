"""The "triton" variant: smemkit's hand-written Triton kernel as a non-cluster candidate."""

import dataclasses
import importlib.util

from smemkit.reduction import BUILTIN
from smemkit.reduction.api import legal_variants, non_cluster_variants, parse_variant_name, variant_from_label
from smemkit.reduction.codegen import Variant
from smemkit.reduction.kernels import legality, triton_unavailable

SMEM = 232448


def test_label_and_parsing_round_trip():
    v = Variant("triton")
    assert v.label == "triton" and v.P == 1
    assert parse_variant_name("triton") == ("triton", 0, False, False)
    assert variant_from_label("triton", 4096) == v


def test_only_builtin_workloads_have_one():
    user = dataclasses.replace(BUILTIN["lars"])  # equal, but not the built-in object
    reason = legality(user, Variant("triton"), 4096, SMEM, 16)
    assert reason is not None and "only the six built-in workloads" in reason


def test_a_missing_triton_package_is_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "triton" else real(name, *a))
    reason = triton_unavailable(BUILTIN["softmax_bwd"])
    assert reason is not None and "pip install triton" in reason
    assert Variant("triton") not in legal_variants(BUILTIN["softmax_bwd"], 4096, SMEM, 16)


def test_a_candidate_of_autotuning_but_never_of_t_b(monkeypatch):
    """T_B (the model's input) is the fastest non-cluster CUDA kernel: the Triton kernel is only
    weighed at dispatch; autotuning times it with the rest."""
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    spec = BUILTIN["pearson_bwd"]
    assert Variant("triton") in legal_variants(spec, 4096, SMEM, 16)
    assert all(v.kind != "triton" for v in non_cluster_variants(spec, 4096, SMEM))


def test_without_triton_dispatch_keeps_the_tables_cuda_pick(monkeypatch):
    """Where the table timed the Triton kernel fastest, a machine without Triton runs the model's
    pick from the same table (not the fallback rule)."""
    from smemkit.reduction.api import _table_pick, model_variant
    from smemkit.reduction.tables import h200_smemkit

    point = next(p for p in h200_smemkit() if (p.workload, p.shape.N) == ("layernorm_bwd", 4096))
    assert point.measured.triton_ms < point.measured.baseline_ms  # the table's pick is Triton
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "triton" else real(name, *a))
    _table_pick.cache_clear()
    try:
        picked = model_variant(BUILTIN["layernorm_bwd"], point.shape.M, 4096, "h200_sxm")
    finally:
        _table_pick.cache_clear()
    assert picked == variant_from_label(point.measured.baseline_variant, 4096) != Variant("triton")
