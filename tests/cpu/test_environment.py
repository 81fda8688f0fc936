"""The device and provenance blocks every benchmark JSON carries (no GPU: torch and nvidia-smi are faked)."""

import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from smemkit.hw import environment


@pytest.fixture
def fake_gpu(monkeypatch):
    import torch

    props = SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132,
                            total_memory=150_000_000_000)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)


def test_device_block_has_the_identity_and_state_of_the_gpu(monkeypatch, fake_gpu):
    answers = {environment.SMI_FIELDS[0][0]: "580.159.04, 345, 1980, 3201, 700.00",
               environment.SMI_FIELDS[1][0]: "GPU-1234, 165, 96.00.A5, Enabled, 35, 78.96, 0x01"}
    monkeypatch.setattr(environment, "_nvidia_smi", answers.get)
    block = environment.device_block()
    assert block["gpu"] == "NVIDIA H200" and block["sm_count"] == 132 and block["capability"] == "9.0"
    assert block["driver"] == "580.159.04" and block["sm_clock_max_mhz"] == "1980"
    assert block["gpu_uuid"] == "GPU-1234" and block["ecc_mode"] == "Enabled"
    assert block["temperature_c"] == "35" and block["clock_event_reasons"] == "0x01"


def test_a_query_the_driver_refuses_loses_only_its_own_fields(monkeypatch, fake_gpu):
    first = environment.SMI_FIELDS[0][0]
    monkeypatch.setattr(environment, "_nvidia_smi",
                        lambda query: "580.159.04, 345, 1980, 3201, 700.00" if query == first else None)
    block = environment.device_block()
    assert block["driver"] == "580.159.04" and block["power_limit_w"] == "700.00"
    assert "gpu_uuid" not in block and "temperature_c" not in block


def test_provenance_names_the_commit_time_command_and_device(monkeypatch):
    monkeypatch.setattr(environment, "git_commit", lambda: "abc1234")
    monkeypatch.setattr(environment.sys, "argv", ["benchmarks/reduction.py", "--out", "my dir/r.json"])
    device = {"gpu": "NVIDIA H200", "driver": "580.159.04", "sm_clock_mhz": "345",
              "sm_clock_max_mhz": "1980", "mem_clock_mhz": "3201", "software": {"torch": "2.11.0"}}
    block = environment.provenance(device)
    assert tuple(block) == environment.PROVENANCE_KEYS
    assert block["commit"] == "abc1234" and block["gpu"] == "NVIDIA H200" and block["driver"] == "580.159.04"
    assert block["command"].endswith("benchmarks/reduction.py --out 'my dir/r.json'")  # quoted: re-runnable
    assert block["clocks"] == {"sm_clock_mhz": "345", "sm_clock_max_mhz": "1980", "mem_clock_mhz": "3201"}
    assert block["software"] == {"torch": "2.11.0"}
    stamp = datetime.fromisoformat(block["date"])
    assert stamp.utcoffset() == timedelta(0)
    assert abs(datetime.now(timezone.utc) - stamp) < timedelta(minutes=5)


def test_provenance_without_a_gpu_says_so_with_nulls(monkeypatch):
    monkeypatch.setattr(environment, "git_commit", lambda: None)
    block = environment.provenance({"software": {}, "gpu": None})
    assert block["gpu"] is None and block["driver"] is None and block["commit"] is None
    assert set(block["clocks"].values()) == {None}


def test_git_commit_of_this_checkout_is_its_head():
    here = str(Path(environment.__file__).parent)
    head = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("smemkit is not imported from a git checkout here")
    assert environment.git_commit().removesuffix("-dirty") == head.stdout.strip()


def test_git_commit_outside_a_checkout_is_none(monkeypatch, tmp_path):
    monkeypatch.setattr(environment, "__file__", str(tmp_path / "environment.py"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert environment.git_commit() is None
