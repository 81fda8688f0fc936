"""The kernel cache: keys, hits, content checks, what ``clear`` may touch, location errors,
several processes at once."""

import json
import multiprocessing as mp
import os
import time

import pytest

from smemkit.cli.main import main
from smemkit.errors import CacheError, InvalidArgumentError
from smemkit.runtime import cache
from smemkit.runtime.compiler import cache_key, compile_module

SOURCE = r'''
#include <smemkit/ptx.cuh>
extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * SCALE;
}
'''


def _entry_files(scale: int):
    key = cache_key(SOURCE, "sm_90a", {"SCALE": scale}, ())
    shard = cache.owned_dir() / "cubin" / key[:2]
    return key, shard / f"{key}.cubin", shard / f"{key}.json"


def test_the_suite_never_uses_the_users_cache():
    """tests/conftest.py points SMEMKIT_CACHE_DIR away from the default before anything compiles."""
    assert os.environ.get(cache.CACHE_ENV)
    assert cache.cache_dir().resolve() != cache.default_cache_dir().resolve()
    home_cache = (cache.default_cache_dir() / cache.OWNED_DIR).resolve()
    assert cache.owned_dir().resolve() != home_cache


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


def test_compile_then_hit_inside_the_owned_folder(isolated_cache):
    first = compile_module(SOURCE, "scale", defines={"SCALE": 2})
    second = compile_module(SOURCE, "scale", defines={"SCALE": 2})
    assert not first.from_cache and second.from_cache
    assert first.cubin == second.cubin
    assert second.resources["scale"].registers > 0
    owned = isolated_cache / cache.OWNED_DIR
    assert (owned / cache.MARKER).is_file()
    assert {p.parent.parent.parent for p in isolated_cache.rglob("*.cubin")} == {owned}
    _, _, meta_path = _entry_files(2)
    meta = json.loads(meta_path.read_text())
    assert meta["cubin_bytes"] == len(first.cubin) and len(meta["cubin_sha256"]) == 64
    assert cache.info().entries == 1
    cleared = cache.clear()
    assert cleared.entries == 1 and cleared.bytes > len(first.cubin)
    assert cache.info().entries == 0 and (owned / cache.MARKER).is_file()


def test_clear_removes_only_what_smemkit_wrote(isolated_cache, capsys):
    """A user's files stay: beside the owned folder (even ones named like entries, in the layout
    an older smemkit used), and inside it when not named in the cache's formats."""
    module = compile_module(SOURCE, "scale", defines={"SCALE": 4})
    cache.update_record("autotune/GPU", "k", {"best": 1})
    fake_key = "ab" + "0" * 62
    mine = {
        isolated_cache / "notes.txt": b"the user's notes",
        isolated_cache / "cubin" / "ab" / f"{fake_key}.cubin": b"a user file named like an entry",
        isolated_cache / "cubin" / "ab" / f"{fake_key}.json": b"{}",
        isolated_cache / "autotune" / "NVIDIA_H200.json": b"{}",
        isolated_cache / "project" / "results.json": b"[1, 2]",
        isolated_cache / cache.OWNED_DIR / "README.md": b"written by the user inside the folder",
        isolated_cache / cache.OWNED_DIR / "cubin" / "zz" / f"{fake_key}.cubin": b"not a shard",
        isolated_cache / cache.OWNED_DIR / "cubin" / "ab" / "notes.cubin": b"not a key",
    }
    for path, data in mine.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    target = isolated_cache / "linked.cubin"
    target.write_bytes(b"target of a link")
    link = cache.owned_dir() / "cubin" / "ab" / f"{'ab' + '1' * 62}.cubin"
    link.symlink_to(target)
    written = [p for p in cache.owned_dir().rglob("*") if p.is_file() and p not in mine
               and not p.is_symlink() and p.name != cache.MARKER]
    expected_bytes = sum(p.stat().st_size for p in written)

    assert main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert f"removed 1 cached kernels and 1 records ({expected_bytes / 1024:.1f} KiB)" in out
    assert "older smemkit" in out  # the cubin/ and autotune/ folders beside it are pointed out
    for path, data in mine.items():
        assert path.read_bytes() == data, path
    assert link.is_symlink() and target.read_bytes() == b"target of a link"
    assert not any(p.exists() for p in written)
    assert cache.read_record("autotune/GPU") == {}
    assert compile_module(SOURCE, "scale", defines={"SCALE": 4}).cubin == module.cubin


def test_clear_json_reports_counts_and_bytes(isolated_cache, capsys):
    compile_module(SOURCE, "scale", defines={"SCALE": 5})
    size = cache.info().bytes
    assert main(["cache", "clear", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["action"], report["entries"], report["records"], report["bytes"]) == (
        "clear", 1, 0, size)
    assert report["owned"] == str(isolated_cache / cache.OWNED_DIR)


def test_a_folder_of_the_owned_name_without_the_marker_is_never_touched(isolated_cache):
    foreign = isolated_cache / cache.OWNED_DIR / "cubin" / "ab"
    foreign.mkdir(parents=True)
    entry_like = foreign / f"{'ab' * 32}.cubin"
    entry_like.write_bytes(b"the user's")
    for attempt in (cache.clear, cache.info,
                    lambda: compile_module(SOURCE, "scale", defines={"SCALE": 6})):
        with pytest.raises(CacheError, match=f"{cache.MARKER} marker.*SMEMKIT_CACHE_DIR="):
            attempt()
    assert entry_like.read_bytes() == b"the user's"
    assert main(["cache", "clear"]) == 2


def test_a_stale_temporary_file_is_cleared_a_fresh_one_is_left(isolated_cache):
    key, cubin_path, _ = _entry_files(7)
    compile_module(SOURCE, "scale", defines={"SCALE": 7})
    stale = cubin_path.parent / f"{key}.cubin.abc_1234.tmp"
    fresh = cubin_path.parent / f"{key}.json.xyz98765.tmp"
    stale.write_bytes(b"left by a killed writer")
    fresh.write_bytes(b"being written now")
    old = time.time() - 2 * cache.STALE_TEMP_S
    os.utime(stale, (old, old))
    cache.clear()
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize("damage", ["flip", "truncate", "swap"])
def test_a_damaged_cubin_is_recompiled_and_replaced(isolated_cache, damage):
    """A cubin of the right length but other content is a miss too (its SHA-256 differs)."""
    good = compile_module(SOURCE, "scale", defines={"SCALE": 3})
    key, cubin_path, _ = _entry_files(3)
    data = bytearray(cubin_path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncate":
        data = data[:100]
    else:  # another kernel's cubin padded to the same length
        other = compile_module(SOURCE, "scale", defines={"SCALE": 8}).cubin
        data = bytearray((other * 2)[: len(data)])
    cubin_path.write_bytes(bytes(data))
    assert cache.load(key) is None
    again = compile_module(SOURCE, "scale", defines={"SCALE": 3})
    assert not again.from_cache and again.cubin == good.cubin
    assert cubin_path.read_bytes() == good.cubin  # replaced on disk
    assert compile_module(SOURCE, "scale", defines={"SCALE": 3}).from_cache


@pytest.mark.parametrize("meta", [b"null", b"{", b"[]", b'"text"', b"\xff\xfe\x00", b"",
                                  b'{"log": 5}', b'{"format": 1, "cubin_bytes": "many"}'])
def test_bad_metadata_is_a_miss_then_replaced(isolated_cache, meta):
    compile_module(SOURCE, "scale", defines={"SCALE": 9})
    key, _, meta_path = _entry_files(9)
    meta_path.write_bytes(meta)
    assert cache.load(key) is None
    again = compile_module(SOURCE, "scale", defines={"SCALE": 9})
    assert not again.from_cache and again.resources["scale"].registers > 0
    assert json.loads(meta_path.read_text())["cubin_sha256"]
    assert compile_module(SOURCE, "scale", defines={"SCALE": 9}).from_cache


def test_a_log_that_is_not_text_is_a_miss(isolated_cache):
    key, _, _ = _entry_files(10)
    cache.store(key, cache.CacheEntry(b"cubin", {"log": ["not", "text"]}))
    assert cache.load(key) is not None  # the entry itself is intact
    module = compile_module(SOURCE, "scale", defines={"SCALE": 10})
    assert not module.from_cache and module.cubin != b"cubin"


def _location_error(monkeypatch, path):
    monkeypatch.setenv(cache.CACHE_ENV, str(path))
    with pytest.raises(CacheError) as caught:
        compile_module(SOURCE, "scale", defines={"SCALE": 11})
    message = str(caught.value)
    assert f"SMEMKIT_CACHE_DIR={path}" in message
    return message


def test_a_cache_dir_that_is_a_file_is_one_clear_error(tmp_path, monkeypatch, capsys):
    file = tmp_path / "a-file"
    file.write_text("the user's")
    assert "is not a directory" in _location_error(monkeypatch, file)
    assert "cannot be created" in _location_error(monkeypatch, file / "sub")
    monkeypatch.setenv(cache.CACHE_ENV, str(file))
    for action in ("info", "clear"):
        assert main(["cache", action]) == 2
        err = capsys.readouterr().err
        assert "smemkit: error: the kernel cache cannot use" in err and str(file) in err
    assert main(["info"]) == 0  # the rest of `smemkit info` still prints
    assert "kernel cache   unusable" in capsys.readouterr().out
    assert file.read_text() == "the user's"


def test_an_owned_folder_that_is_a_file_is_an_error(tmp_path, monkeypatch):
    (tmp_path / cache.OWNED_DIR).write_text("the user's")
    assert "is not a directory" in _location_error(monkeypatch, tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only directory")
def test_a_read_only_cache_dir_is_an_error(tmp_path, monkeypatch):
    tmp_path.chmod(0o500)
    try:
        assert "cannot be created or written" in _location_error(monkeypatch, tmp_path)
    finally:
        tmp_path.chmod(0o700)


def test_the_unset_default_is_named_in_the_error(tmp_path, monkeypatch):
    (tmp_path / "smemkit").write_text("not a folder")
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(CacheError, match="SMEMKIT_CACHE_DIR is unset, so the default .* is used"):
        cache.store("ab" * 32, cache.CacheEntry(b"x", {}))


def test_records_live_in_the_owned_folder_and_names_are_checked(isolated_cache):
    cache.update_record("autotune/NVIDIA_H200", "k", {"best": 1})
    assert cache.record_path("autotune/NVIDIA_H200").is_relative_to(isolated_cache / cache.OWNED_DIR)
    assert cache.read_record("autotune/NVIDIA_H200") == {"k": {"best": 1}}
    cache.record_path("autotune/NVIDIA_H200").write_text("null")
    assert cache.read_record("autotune/NVIDIA_H200") == {}
    for bad in ("../escape", "/abs", "a//b", ""):
        with pytest.raises(InvalidArgumentError, match="record name"):
            cache.update_record(bad, "k", {})
    with pytest.raises(InvalidArgumentError, match="cache key"):
        cache.load("../" + "a" * 61)


def _compile_in_child(queue, scale):
    module = compile_module(SOURCE, "scale", defines={"SCALE": scale})
    queue.put((scale, module.cubin))


def test_several_processes_compile_the_same_kernels(isolated_cache):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    scales = [7, 7, 7, 12]
    children = [ctx.Process(target=_compile_in_child, args=(queue, s)) for s in scales]
    for c in children:
        c.start()
    results = [queue.get(timeout=180) for _ in children]
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    assert len({cubin for scale, cubin in results if scale == 7}) == 1
    assert cache.info().entries == 2
    assert not list(isolated_cache.rglob("*.tmp"))
    assert len(list(isolated_cache.glob(".*.tmp"))) == 0  # no staging folder left behind


KEY = "cd" * 32


def _write_and_read(writer: int, rounds: int, queue) -> None:
    """Store this writer's version of one entry and load it, many times; report what was seen."""
    seen = []
    for _ in range(rounds):
        cubin = bytes([writer]) * 4096  # one length for all: only the SHA-256 tells them apart
        cache.store(KEY, cache.CacheEntry(cubin, {"writer": writer}))
        entry = cache.load(KEY)
        if entry is not None:
            seen.append((entry.meta["writer"], entry.cubin[0], len(set(entry.cubin))))
    queue.put(seen)


def test_concurrent_writers_and_readers_never_see_a_mixed_entry(isolated_cache):
    """Writers replace one entry's cubin and metadata by separate renames; a reader between the
    two gets a miss (the SHA-256 disagrees), never one writer's metadata on another's cubin."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    children = [ctx.Process(target=_write_and_read, args=(w, 150, queue)) for w in (1, 2, 3)]
    for c in children:
        c.start()
    seen = [item for _ in children for item in queue.get(timeout=180)]
    for c in children:
        c.join(timeout=60)
        assert c.exitcode == 0
    assert seen and all(writer == first and kinds == 1 for writer, first, kinds in seen)
    assert cache.load(KEY) is not None
    assert not list(isolated_cache.rglob("*.tmp"))
