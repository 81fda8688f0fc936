"""Test markers (``gpu`` tests skip with a reason where no CUDA GPU is visible) and the kernel
cache the tests use.

The tests never write into the user's cache: at import, before any test module compiles a kernel,
``SMEMKIT_CACHE_DIR`` is pointed at a temporary directory made for the test run (removed at its end),
unless the caller already set it to somewhere other than the default location (as
``scripts/gpu-check`` does, so that its later steps reuse the kernels the tests compiled).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from smemkit.runtime import cache


def _test_run_cache_dir() -> tuple[Path, bool]:
    """The cache directory for the test run and whether it is a temporary one made here."""
    chosen = os.environ.get(cache.CACHE_ENV)
    if chosen:
        path = Path(chosen).expanduser()
        if path.resolve() != cache.default_cache_dir().resolve():
            return path, False
    return Path(tempfile.mkdtemp(prefix="smemkit-test-cache-")), True


TEST_RUN_CACHE_DIR, TEST_RUN_CACHE_IS_TEMPORARY = _test_run_cache_dir()
os.environ[cache.CACHE_ENV] = str(TEST_RUN_CACHE_DIR)


def pytest_unconfigure(config: pytest.Config) -> None:
    if TEST_RUN_CACHE_IS_TEMPORARY:
        shutil.rmtree(TEST_RUN_CACHE_DIR, ignore_errors=True)


def _gpu_reason() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA GPU visible (run scripts/gpu-check on a GPU machine)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _gpu_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch):
    """A private, empty kernel cache for the test."""
    monkeypatch.setenv("SMEMKIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
