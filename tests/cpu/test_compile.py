"""Compile-only checks for sm_90a: every shipped kernel builds, and none spills."""

from importlib import resources
from pathlib import Path

import pytest

from smemkit.errors import CompileError
from smemkit.runtime.compiler import compile_module, parse_ptxas_log

SHIPPED = sorted(
    str(p.relative_to(Path(str(resources.files("smemkit")))))
    for p in Path(str(resources.files("smemkit"))).rglob("*.cu")
)
REPO = Path(__file__).resolve().parents[2]
TEST_KERNELS = sorted([*REPO.joinpath("tests", "gpu", "kernels").glob("*.cu"),
                       *REPO.joinpath("benchmarks", "kernels").glob("*.cu")])


def test_there_are_shipped_kernels():
    assert "hw/probe_kernels.cu" in SHIPPED


@pytest.mark.parametrize("relative", SHIPPED)
def test_shipped_kernel_compiles_without_spills(relative):
    from smemkit.runtime.compiler import package_source

    module = compile_module(package_source(relative), relative, arch="sm_90a")
    assert module.resources, f"no kernels reported for {relative}"
    for name, usage in module.resources.items():
        assert not usage.spills, f"{relative}:{name} spills: {usage}"
        assert usage.stack_bytes == 0, f"{relative}:{name} uses a stack frame: {usage}"


@pytest.mark.parametrize("path", TEST_KERNELS, ids=lambda p: p.name)
def test_test_kernels_compile(path):
    module = compile_module(path.read_text(), path.name, arch="sm_90a")
    assert all(not u.spills for u in module.resources.values())


PTX_EXERCISE = r'''
#include <smemkit/ptx.cuh>
using namespace smemkit;
// Touches every primitive of ptx.cuh so ptxas checks each asm string.
extern "C" __global__ void __cluster_dims__(2, 1, 1) exercise(float* out, const float4* src) {
  __shared__ __align__(16) float buf[64];
  __shared__ __align__(8) u64 bar;
  const u32 b = smem_u32(&bar);
  if (threadIdx.x == 0) { mbarrier_init(b, 1); fence_mbarrier_init_cluster(); }
  cluster_arrive_relaxed(); cluster_wait();
  const u32 peer = mapa(smem_u32(buf), cluster_ctarank() ^ 1);
  const u32 peer_bar = mapa(b, cluster_ctarank() ^ 1);
  if (threadIdx.x == 0) {
    mbarrier_arrive_expect_tx(b, 16 + 8 + 4 + 64);
    st_async_f32(peer, 1.f, peer_bar);
    st_async_v2f32(peer + 8, 1.f, 2.f, peer_bar);
    st_async_v4f32(peer + 16, make_float4(1, 2, 3, 4), peer_bar);
    fence_proxy_async_shared();
    cp_async_bulk_g2s(smem_u32(buf) + 64, src, 64, b);
    cp_async_bulk_tensor_2d_g2s(smem_u32(buf), src, 0, 0, b);
    cp_async_bulk_tensor_2d_g2s_multicast(smem_u32(buf), src, 0, 0, b, static_cast<u16>(3));
    mbarrier_expect_tx(b, 0);
    mbarrier_arrive(b);
    mbarrier_wait_parity(b, 0);
  }
  st_cluster_f32(peer + 4 * threadIdx.x, ld_cluster_f32(peer));
  st_cluster_u32(peer, ld_cluster_u32(peer) + ld_shared_u32(smem_u32(buf)));
  cluster_sync();
  out[threadIdx.x] = buf[threadIdx.x] + smid() + cluster_nctarank() + cluster_id_x()
                   + nclusters_x() + static_cast<float>(globaltimer() & 1u);
}
'''


def test_every_ptx_primitive_assembles():
    module = compile_module(PTX_EXERCISE, "ptx_exercise", arch="sm_90a")
    assert "exercise" in module.resources


def test_compile_error_names_kernel_and_carries_log():
    with pytest.raises(CompileError) as err:
        compile_module('extern "C" __global__ void broken() { undefined_thing(); }',
                       "broken_module", arch="sm_90a")
    text = str(err.value)
    assert "broken_module" in text and "undefined_thing" in text


def test_ptxas_log_parsing():
    log = """ptxas info    : Compiling entry function 'a' for 'sm_90a'
ptxas info    : Function properties for a
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compiling entry function 'b' for 'sm_90a'
ptxas info    : Function properties for b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
"""
    usage = parse_ptxas_log(log)
    assert usage["a"].registers == 40 and usage["a"].spills and usage["a"].static_smem_bytes == 1024
    assert usage["a"].stack_bytes == 8
    assert usage["b"].registers == 12 and not usage["b"].spills


class FakeProgram:
    """Stands in for cuda.core.Program: records the options, returns a log set by the test."""

    options = None
    log = ""

    def __init__(self, source, code_type, options):
        FakeProgram.options = options

    def compile(self, target, logs=None):
        logs.write(FakeProgram.log)
        return type("Obj", (), {"code": b"cubin"})()


@pytest.mark.parametrize("version,expected", [((13, 0), True), ((12, 9), True), ((12, 8), False),
                                               (None, False)])
def test_nvrtcs_own_cache_is_switched_off_from_12_9(monkeypatch, version, expected):
    """NVRTC 12.9 and newer cache compiled programs themselves; on their hits ptxas does not run
    and the log has no resource lines (on the H200 a second compile of a kernel on the same
    machine, in a fresh smemkit cache, came back with an empty log: commit 75e5a3a), so smemkit
    passes --no-cache."""
    import cuda.core

    from smemkit.runtime import compiler

    monkeypatch.setattr(cuda.core, "Program", FakeProgram)
    monkeypatch.setattr(compiler, "nvrtc_version", lambda: version)
    FakeProgram.log = "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
    compiler._nvrtc_compile("", "k", "sm_90a", {}, ())
    assert bool(FakeProgram.options.no_cache) is expected


def test_a_log_without_resources_is_an_error_and_is_not_cached(monkeypatch, isolated_cache):
    import cuda.core

    from smemkit.runtime import cache as disk_cache
    from smemkit.runtime.compiler import cache_key

    monkeypatch.setattr(cuda.core, "Program", FakeProgram)
    FakeProgram.log = "k(3): warning #177-D: variable declared but never referenced\n"
    with pytest.raises(CompileError, match="no ptxas resource lines"):
        compile_module("// no resources", "empty_log", arch="sm_90a")
    assert disk_cache.load(cache_key("// no resources", "sm_90a", {}, ())) is None


def test_a_cached_entry_without_resources_is_compiled_again(isolated_cache):
    """Entries stored while NVRTC's cache was on may hold logs without ptxas' lines."""
    from smemkit.runtime import cache as disk_cache
    from smemkit.runtime.compiler import cache_key

    source = 'extern "C" __global__ void again(float* x) { x[threadIdx.x] += 3.0f; }'
    disk_cache.store(cache_key(source, "sm_90a", {}, ()), disk_cache.CacheEntry(b"stale", {"log": ""}))
    module = compile_module(source, "again", arch="sm_90a")
    assert not module.from_cache and module.cubin != b"stale" and "again" in module.resources


def test_a_second_compile_in_an_empty_cache_still_reports_resources(tmp_path, monkeypatch):
    """NVRTC 12.9 and newer cache compiled programs themselves, and on their hits ptxas does not run,
    so the log carries no resources; smemkit switches that cache off (compiler.NVRTC_CACHE_SINCE).
    The same source compiled twice, each time into an empty smemkit cache, reports its registers
    both times (on the H200's NVRTC the second log came back empty before)."""
    source = 'extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }'
    usage = []
    for run in ("first", "second"):
        monkeypatch.setenv("SMEMKIT_CACHE_DIR", str(tmp_path / run))
        module = compile_module(source, "twice", arch="sm_90a")
        assert not module.from_cache
        usage.append(module.resources.get("twice"))
    assert usage[0] is not None and usage[0] == usage[1]
