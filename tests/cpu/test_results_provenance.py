"""Every results file under benchmarks/results/h200 says where it came from: a top-level
``provenance`` block (smemkit.hw.environment.provenance) with the commit, date, command, GPU,
driver, clocks and software versions, ``"unknown"`` where a value could not be established."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime
from pathlib import Path

import pytest

from smemkit.hw.environment import CLOCK_KEYS, PROVENANCE_KEYS

ROOT = Path(__file__).resolve().parents[2]
RESULTS = sorted((ROOT / "benchmarks" / "results" / "h200").glob("*.json"))
UNKNOWN = (None, "unknown")
COMMIT = re.compile(r"[0-9a-f]{7,40}(-dirty)?")


def _provenance(path: Path) -> dict:
    doc = json.loads(path.read_text())
    assert isinstance(doc, dict) and isinstance(doc.get("provenance"), dict), \
        f"{path.name}: no top-level provenance block"
    return doc["provenance"]


def test_there_are_results_to_check():
    assert len(RESULTS) >= 10


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_results_file_has_provenance_with_every_key(path: Path):
    prov = _provenance(path)
    missing = [key for key in PROVENANCE_KEYS if key not in prov]
    assert not missing, f"{path.name}: provenance lacks {missing}"
    assert prov["commit"] in UNKNOWN or COMMIT.fullmatch(prov["commit"]), prov["commit"]
    assert datetime.fromisoformat(prov["date"]).tzinfo is not None, f"{path.name}: date without a zone"
    assert isinstance(prov["command"], str) and prov["command"].strip(), f"{path.name}: empty command"
    assert prov["clocks"] in UNKNOWN or set(prov["clocks"]) == set(CLOCK_KEYS)
    assert prov["software"] in UNKNOWN or isinstance(prov["software"], dict)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_provenance_agrees_with_the_device_block(path: Path):
    doc = json.loads(path.read_text())
    prov, device = doc["provenance"], doc.get("device")
    if not device:
        pytest.skip(f"{path.name} has no device block")
    assert prov["gpu"] == device.get("gpu") and prov["driver"] == device.get("driver")
    assert prov["software"] == device.get("software")
    assert prov["clocks"] == {key: device.get(key) for key in CLOCK_KEYS}


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_provenance_commit_is_in_this_repository(path: Path):
    commit = _provenance(path)["commit"]
    if commit in UNKNOWN:
        pytest.skip(f"{path.name}: commit unknown")
    def git(*args: str) -> int:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True).returncode

    found = git("cat-file", "-e", f"{commit.removesuffix('-dirty')}^{{commit}}")
    if found != 0 and git("rev-parse", "--git-dir") != 0:
        pytest.skip("not a git checkout")
    assert found == 0, f"{path.name}: commit {commit} is not in this repository's history"
