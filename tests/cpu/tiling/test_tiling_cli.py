"""CLI smoke tests for ``tiling analyze|list`` and ``occupancy`` (the owner wires register() into main)."""

import argparse
import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.tiling import cli


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """Rich wraps table cells at the terminal width; a wide one keeps the strings we look for whole."""
    monkeypatch.setenv("COLUMNS", "250")


def run(argv, register=cli.register):
    parser = argparse.ArgumentParser(prog="smemkit")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(argv)
    return args.run(args)


def test_analyze_builtin_shows_wavefronts_picture_and_advice(capsys):
    assert run(["tiling", "analyze", "transpose_32x32_fp32"]) == 0
    out = capsys.readouterr().out
    assert "1024" in out and "bank picture" in out and "Swizzle(5,0,5)" in out and "pad 1 element" in out
    assert "tile[tx][ty+j]" in out  # brackets in labels are not eaten as markup


def test_analyze_json(capsys):
    assert run(["tiling", "analyze", "cp_async_double_buffer", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["accesses"][1]["worst"]["wavefronts"] == 32
    assert data["advice"][0]["swizzles"][0]["fix"] == "Swizzle(3,2,3)"


def test_analyze_json_file_no_advice_and_warp(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"block": [32, 2], "arrays": {"a": {"shape": [64], "dtype": "fp64"}},
                                "accesses": [{"array": "a", "index": "tid", "width": 64}]}))
    assert run(["tiling", "analyze", str(path), "--no-advice", "--warp", "1", "--all-instructions"]) == 0
    out = capsys.readouterr().out
    assert "advice" not in out and "warp 1" in out
    with pytest.raises(InvalidArgumentError, match="--warp"):
        run(["tiling", "analyze", str(path), "--warp", "5"])


def test_list(capsys):
    assert run(["tiling", "list"]) == 0
    assert "gemm_b_tile" in capsys.readouterr().out


def test_occupancy(capsys):
    assert run(["occupancy", "--arch", "sm_90", "--threads", "256", "--regs", "32", "--smem", "100K"]) == 0
    out = capsys.readouterr().out
    assert "blocks per SM" in out and "shared_memory" in out
    assert run(["occupancy", "--threads", "128", "--regs", "32", "--cluster", "2", "--json"],
               register=cli.register_occupancy) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["blocks_per_sm"] == 16 and data["max_active_clusters"] == 132 * 8 // 2  # 8 per SM in clusters


def test_register_tiling_alone_and_bad_smem():
    assert run(["tiling", "list"], register=cli.register_tiling) == 0
    with pytest.raises(SystemExit):
        run(["occupancy", "--threads", "1", "--regs", "1", "--smem", "lots"])
