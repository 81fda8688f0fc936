from smemkit.runtime import paths


def test_cuda_home_wins(monkeypatch, tmp_path):
    inc = tmp_path / "include"
    (inc / "cccl").mkdir(parents=True)
    (inc / "cuda_runtime.h").write_text("")
    (inc / "cuda.h").write_text("#define CUDA_VERSION 13000\n")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    paths.cuda_include_dirs.cache_clear()
    try:
        dirs = paths.cuda_include_dirs()
        assert dirs[:2] == (inc.resolve(), (inc / "cccl").resolve())
        assert paths.toolkit_header_version() == "13000"
        assert paths.include_dirs()[0] == paths.PACKAGE_INCLUDE
    finally:
        paths.cuda_include_dirs.cache_clear()


def test_pip_wheel_headers_are_found(monkeypatch, tmp_path):
    import importlib.util
    from types import SimpleNamespace

    inc = tmp_path / "nvidia" / "cu13" / "include"
    inc.mkdir(parents=True)
    (inc / "cuda_runtime.h").write_text("")
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(paths, "_toolkit_roots", lambda: [tmp_path / "nowhere"])
    fake = SimpleNamespace(submodule_search_locations=[str(tmp_path / "nvidia")])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: fake)
    paths.cuda_include_dirs.cache_clear()
    try:
        assert paths.cuda_include_dirs() == (inc.resolve(),)
    finally:
        paths.cuda_include_dirs.cache_clear()


def test_nothing_found_is_empty(monkeypatch, tmp_path):
    import importlib.util

    monkeypatch.setattr(paths, "_toolkit_roots", lambda: [tmp_path])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    paths.cuda_include_dirs.cache_clear()
    try:
        assert paths.cuda_include_dirs() == ()
        assert paths.toolkit_header_version() == "none"
    finally:
        paths.cuda_include_dirs.cache_clear()
