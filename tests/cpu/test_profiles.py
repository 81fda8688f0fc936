import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import DeviceProfile, builtin_profiles, select_profile

# CREDIT paper (seed 000) Table II, transcribed independently of the JSON files.
TABLE_II = {
    "h100_sxm": (30, 191, 851, 20.89, 4.77, 27.67, 21.37),
    "rtx5090": (34, 216, 404, 20.89, 3.84, 33.01, 2.14),
}


@pytest.mark.parametrize("name", sorted(TABLE_II))
def test_embedded_profiles_carry_table_ii(name):
    p = builtin_profiles()[name].dsmem
    got = (p.local_load_cycles, p.remote_load_cycles, p.barrier_cycles[2], p.local_read_bpc,
           p.remote_read_bpc, p.local_store_bpc, p.remote_store_bpc)
    assert got == pytest.approx(TABLE_II[name])


def test_every_profile_has_provenance_for_dsmem_and_bandwidth():
    for profile in builtin_profiles().values():
        assert {"dsmem", "hbm_tbps"} <= set(profile.provenance), profile.name


def test_json_round_trip(tmp_path):
    original = builtin_profiles()["h100_sxm"]
    path = tmp_path / "p.json"
    original.save(path)
    assert DeviceProfile.load(path) == original
    # a probe results file wraps the profile under "profile"
    wrapped = tmp_path / "probe.json"
    wrapped.write_text(json.dumps({"profile": original.to_dict(), "raw": {}}))
    assert DeviceProfile.load(wrapped) == original


def test_select_by_alias_and_file(tmp_path):
    assert select_profile("h100")[0].name == "h100_sxm"
    assert select_profile("RTX5090")[0].name == "rtx5090"
    path = tmp_path / "mine.json"
    builtin_profiles()["rtx5090"].save(path)
    profile, reason = select_profile(str(path))
    assert profile.name == "rtx5090" and str(path) in reason


def test_select_unknown_names_the_choices():
    with pytest.raises(InvalidArgumentError, match="h100_sxm"):
        select_profile("a100")


def test_invalid_profile_json_is_a_clear_error():
    with pytest.raises(InvalidArgumentError, match="not a valid smemkit device profile"):
        DeviceProfile.from_dict({"name": "x"})


def test_default_without_gpu_says_why():
    profile, reason = select_profile()
    assert profile.name in builtin_profiles()
    assert "default" in reason or "matches" in reason


@pytest.mark.parametrize("gpu,key", [("NVIDIA H200", "h200_sxm"), ("NVIDIA H100 80GB HBM3", "h100_sxm"),
                                     ("NVIDIA H100 PCIe", None), ("NVIDIA H100 NVL", None),
                                     ("NVIDIA GH200 480GB", None), ("NVIDIA GeForce RTX 5090", "rtx5090"),
                                     ("NVIDIA A100-SXM4-80GB", None)])
def test_gpu_names_map_only_to_the_part_they_describe(gpu, key):
    from smemkit.hw.profile import profile_for_gpu_name

    assert profile_for_gpu_name(gpu) == key


def test_unreadable_profile_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="cannot read device profile"):
        DeviceProfile.load(bad)
