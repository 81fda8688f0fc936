import multiprocessing as mp

from smemkit.runtime import cache
from smemkit.runtime.compiler import cache_key, compile_module

SOURCE = r'''
#include <smemkit/ptx.cuh>
extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * SCALE;
}
'''


def test_key_depends_on_source_defines_arch_and_options():
    base = cache_key(SOURCE, "sm_90a", {"SCALE": 1}, ())
    assert base == cache_key(SOURCE, "sm_90a", {"SCALE": 1}, ())
    assert base != cache_key(SOURCE + " ", "sm_90a", {"SCALE": 1}, ())
    assert base != cache_key(SOURCE, "sm_90a", {"SCALE": 2}, ())
    assert base != cache_key(SOURCE, "sm_100a", {"SCALE": 1}, ())
    assert base != cache_key(SOURCE, "sm_90a", {"SCALE": 1}, ("-O1",))


def test_key_follows_included_smemkit_headers(monkeypatch, tmp_path):
    from smemkit.runtime import compiler

    inc = tmp_path / "smemkit"
    inc.mkdir()
    (inc / "ptx.cuh").write_text("// version one\n")
    monkeypatch.setattr(compiler, "PACKAGE_INCLUDE", tmp_path)
    first = cache_key(SOURCE, "sm_90a", {}, ())
    (inc / "ptx.cuh").write_text("// version two\n")
    assert cache_key(SOURCE, "sm_90a", {}, ()) != first


def test_compile_then_hit(isolated_cache):
    first = compile_module(SOURCE, "scale", defines={"SCALE": 2})
    second = compile_module(SOURCE, "scale", defines={"SCALE": 2})
    assert not first.from_cache and second.from_cache
    assert first.cubin == second.cubin
    assert second.resources["scale"].registers > 0
    assert cache.info()["entries"] == 1
    assert cache.clear() == 1 and cache.info()["entries"] == 0


def test_torn_entry_is_a_miss(isolated_cache):
    compile_module(SOURCE, "scale", defines={"SCALE": 3})
    (cubin,) = isolated_cache.rglob("*.cubin")
    cubin.write_bytes(cubin.read_bytes()[:100])
    again = compile_module(SOURCE, "scale", defines={"SCALE": 3})
    assert not again.from_cache and len(again.cubin) > 100


def _compile_in_child(queue):
    module = compile_module(SOURCE, "scale", defines={"SCALE": 7})
    queue.put(module.cubin)


def test_two_processes_compile_the_same_kernel(isolated_cache):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    children = [ctx.Process(target=_compile_in_child, args=(queue,)) for _ in range(2)]
    for c in children:
        c.start()
    results = [queue.get(timeout=120) for _ in children]
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    assert results[0] == results[1]
    assert cache.info()["entries"] == 1
    assert not list(isolated_cache.rglob("*.tmp"))
