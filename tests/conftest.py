"""Test markers: ``gpu`` tests skip with a reason where no CUDA GPU is visible."""

from __future__ import annotations

import pytest
import torch


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
