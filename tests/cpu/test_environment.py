"""The device block every benchmark JSON starts with (no GPU: torch and nvidia-smi are faked)."""

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
