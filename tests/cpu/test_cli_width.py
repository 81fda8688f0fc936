"""Every command's output fits an 80-column terminal with every number whole: no line longer
than 80 characters and no cell cut short (rich marks a cut with "…"), and the same numbers as
the wide output."""

import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from smemkit.cli.main import main
from smemkit.cli.tables import CUT, fits, show

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "advise": ["advise", "layernorm_bwd", "--rows", "2048", "--width", "65536", "--profile", "h100"],
    "advise-h200": ["advise", "softmax_bwd", "--rows", "4096", "--width", "16384", "--profile", "h200"],
    "offload plan": ["offload", "plan", "--model", "llama-3-70b", "--batch", "8", "--seq", "2048",
                     "--gpu-mem", "80", "--profile", "h200"],
    "offload path": ["offload", "path", "--shape", "4096x14336", "--batch", "4", "--ratio", "0.05"],
    "tiling analyze": ["tiling", "analyze", "cp_async_double_buffer"],
    "tiling analyze all": ["tiling", "analyze", "fp16_pairs", "--all-instructions"],
    "occupancy": ["occupancy", "--threads", "256", "--regs", "64", "--smem", "48K", "--cluster", "4"],
    "atomics analyze": ["atomics", "analyze", str(ROOT / "tests/data/atomics_hist_ncu.csv"), "--per-launch"],
    "atomics table": ["atomics", "table"],
    "info": ["info"],
}
NUMBER = re.compile(r"\d[\d,]*\.\d+|\d[\d,]{3,}")  # the figures a cut or a fold would damage


def output(capsys, monkeypatch, argv, columns: int) -> str:
    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_fits_80_columns_with_numbers_whole(capsys, monkeypatch, name):
    narrow = output(capsys, monkeypatch, COMMANDS[name], 80)
    long = [line for line in narrow.splitlines() if len(line) > 80]
    assert not long, long[:3]
    assert CUT not in narrow
    wide = output(capsys, monkeypatch, COMMANDS[name], 400)
    # table cells: every number of the wide output appears whole at 80 columns
    assert sorted(set(NUMBER.findall(wide)) - set(NUMBER.findall(narrow))) == []


def test_narrow_layouts_keep_every_cell():
    table = Table(title="wide")
    for i in range(14):
        table.add_column(f"column {i}", justify="right")
    table.add_row(*(f"{i * 1234.5678:,.4f}" for i in range(14)))
    table.add_row(*(f"{-i * 0.000123:.6f}" for i in range(14)))
    assert not fits(table, 80)
    for narrow in ("split", "records"):
        console = Console(width=80, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
        show(console, table, narrow=narrow)
        text = console.export_text()
        assert CUT not in text and max(len(line) for line in text.splitlines()) <= 80
        for i in range(14):
            assert f"{i * 1234.5678:,.4f}" in text and f"{-i * 0.000123:.6f}" in text
