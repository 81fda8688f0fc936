from smemkit.runtime import paths


def _toolkit(root, version="13000"):
    inc = root / "include"
    (inc / "cccl").mkdir(parents=True)
    (inc / "cuda_runtime.h").write_text("")
    (inc / "cuda.h").write_text(f"#define CUDA_VERSION {version}\n")
    return inc


def _fake_wheels(monkeypatch, tmp_path, version="13050"):
    """A site-packages ``nvidia`` namespace holding the CUDA 13 wheels' header layout."""
    import importlib.util
    from types import SimpleNamespace

    inc = _toolkit(tmp_path / "site" / "nvidia" / "cu13", version)
    fake = SimpleNamespace(submodule_search_locations=[str(tmp_path / "site" / "nvidia")])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: fake)
    return inc


def _fresh(monkeypatch):
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv(paths.IGNORE_SYSTEM_ENV, raising=False)
    paths.cuda_include_dirs.cache_clear()


def test_cuda_home_wins(monkeypatch, tmp_path):
    _fresh(monkeypatch)
    inc = _toolkit(tmp_path / "home")
    _fake_wheels(monkeypatch, tmp_path)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    try:
        dirs = paths.cuda_include_dirs()
        assert dirs == (inc.resolve(), (inc / "cccl").resolve())
        assert paths.toolkit_header_version() == "13000"
        assert paths.include_dirs()[0] == paths.PACKAGE_INCLUDE
    finally:
        paths.cuda_include_dirs.cache_clear()


def test_wheels_come_before_an_installed_toolkit(monkeypatch, tmp_path):
    _fresh(monkeypatch)
    wheel = _fake_wheels(monkeypatch, tmp_path)
    _toolkit(tmp_path / "usr-local-cuda")
    monkeypatch.setattr(paths, "_installed_roots", lambda: [tmp_path / "usr-local-cuda"])
    try:
        assert paths.cuda_include_dirs() == (wheel.resolve(), (wheel / "cccl").resolve())
        assert paths.toolkit_header_version() == "13050"
    finally:
        paths.cuda_include_dirs.cache_clear()


def test_an_installed_toolkit_is_the_fallback(monkeypatch, tmp_path):
    import importlib.util

    _fresh(monkeypatch)
    inc = _toolkit(tmp_path / "usr-local-cuda")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(paths, "_installed_roots", lambda: [tmp_path / "usr-local-cuda"])
    try:
        assert paths.cuda_include_dirs()[0] == inc.resolve()
    finally:
        paths.cuda_include_dirs.cache_clear()


def test_ignoring_the_system_cuda_leaves_the_wheels(monkeypatch, tmp_path):
    _fresh(monkeypatch)
    _toolkit(tmp_path / "home")
    wheel = _fake_wheels(monkeypatch, tmp_path)
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(paths.IGNORE_SYSTEM_ENV, "1")
    try:
        assert paths._toolkit_roots() == []
        assert paths.cuda_include_dirs() == (wheel.resolve(), (wheel / "cccl").resolve())
    finally:
        paths.cuda_include_dirs.cache_clear()


def test_nothing_found_is_empty(monkeypatch, tmp_path):
    import importlib.util

    _fresh(monkeypatch)
    monkeypatch.setattr(paths, "_installed_roots", lambda: [tmp_path])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    try:
        assert paths.cuda_include_dirs() == ()
        assert paths.toolkit_header_version() == "none"
    finally:
        paths.cuda_include_dirs.cache_clear()
