"""DAK's direct-access GEMM (smemkit.offload.direct_gemm) without a GPU: both dtypes compile for
sm_90a with no local memory, the Python mirrors of the kernel's constants match the source, and
the launch plan covers every (host tile, 64-k chunk) exactly once per m-group with no idle
cluster and no empty k-split, within shared memory."""

import math
import re
import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError
from smemkit.offload import direct_gemm as dg
from smemkit.offload import gemv

SMEM_OPTIN = 232448  # H100 / H200 per-block opt-in


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_direct_kernel_compiles_without_local_memory(dtype):
    usage = dg.compile_variant(dtype, "sm_90a").resources[dg.KERNEL]
    assert not usage.spills and usage.stack_bytes == 0, usage


def test_python_mirrors_match_the_kernel_source():
    src = dg.source()
    pattern = r"^#define\s+(DG_\w+)\s+(.+?)\s*(?://.*)?$"
    val = {m.group(1): m.group(2) for m in re.finditer(pattern, src, re.M)}
    assert int(val["DG_BM"]) == dg.BM and int(val["DG_BN"]) == dg.BN and int(val["DG_BK"]) == dg.BK
    assert int(val["DG_MATH_WARPS"]) * 32 + 32 == dg.THREADS
    assert int(val["DG_MAX_STAGES"]) == dg.MAX_STAGES
    assert 2 * dg.BM * dg.BK * 2 == dg.SLOT_BYTES  # DG_SLOT_BYTES: the x tile and the weight tile
    assert (int(val["DG_BOX"]), int(val["DG_SUB_BOX"])) == dg.BOX_ROWS
    assert int(val["DG_MAP_BYTES"]) == dg.TENSOR_MAP_BYTES
    assert len([p for p in dg.PARAMS if p == "u64"]) * 8 == dg.TENSOR_MAP_BYTES  # the x map's words


@settings(max_examples=300, deadline=None)
@given(m=st.integers(1, 2100), n_h=st.integers(1, 5000), k=st.integers(8, 30000).map(lambda v: v // 8 * 8),
       P=st.sampled_from([None, 1, 2, 4]), streams=st.integers(1, 12), stages=st.integers(1, dg.MAX_STAGES),
       split=st.one_of(st.none(), st.integers(1, 40)))
def test_plan_covers_every_tile_and_chunk_once(m, n_h, k, P, streams, stages, split):
    kchunks = math.ceil(k / dg.BK)
    if split is not None and split > kchunks:
        with pytest.raises(InvalidArgumentError, match="split"):
            dg.plan_direct(m, n_h, k, P=P, streams=streams, stages=stages, split=split)
        return
    plan = dg.plan_direct(m, n_h, k, P=P, streams=streams, stages=stages, split=split)
    assert plan.P * plan.m_groups * dg.BM >= m  # every input row has a CTA
    assert (plan.m_groups - 1) * plan.P * dg.BM < m  # and no m-group is wholly past M
    assert plan.clusters % plan.m_groups == 0
    n_streams = plan.clusters // plan.m_groups
    units = plan.tiles * plan.split
    assert 1 <= n_streams <= units  # no idle cluster
    assert plan.tiles == math.ceil(n_h / dg.BN)
    seen = {}
    for stream in range(n_streams):  # the kernel's Units walk
        for u in range(stream, units, n_streams):
            tile, s = divmod(u, plan.split)
            chunks = range(s * plan.cps, min(kchunks, (s + 1) * plan.cps))
            assert len(chunks) > 0  # no empty k-split
            for kc in chunks:
                seen[(tile, kc)] = seen.get((tile, kc), 0) + 1
    assert seen == {(t, kc): 1 for t in range(plan.tiles) for kc in range(kchunks)}
    assert plan.smem <= SMEM_OPTIN
    dg.check_plan(plan, m, n_h, k)  # a plan the planner made passes the launchers' check
    if n_h > dg.BN:
        with pytest.raises(InvalidArgumentError, match="does not fit"):
            dg.check_plan(plan, m, n_h - dg.BN, k)


def test_default_cluster_size_follows_the_input_rows():
    sizes = [dg.default_cluster_size(m) for m in (1, 128, 129, 256, 257, 384, 512, 4096)]
    assert sizes == [1, 1, 2, 2, 2, 2, 4, 4]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"P": 3}, "cluster size"), ({"stages": 0}, "stages"), ({"stages": 7}, "stages"),
    ({"streams": 0}, "streams"), ({"split": 0}, "split")])
def test_bad_plans_name_the_argument(kwargs, match):
    with pytest.raises(InvalidArgumentError, match=match):
        dg.plan_direct(512, 300, 4096, **kwargs)


def test_direct_is_a_path_auto_never_takes():
    weight = types.SimpleNamespace(shape=(4096, 14336), dtype=torch.bfloat16, host_rows=208, n_hbm=3888,
                                   device=torch.device("cuda", 0))
    for rows in (65, 512, 4096):  # large batches: the rule decides by the shape alone
        assert gemv.linear_path(weight, rows) == "ring"
        assert gemv.linear_path(weight, rows, "direct") == "direct"
    with pytest.raises(InvalidArgumentError, match="allowed"):
        gemv.linear_path(weight, 512, "tma")
