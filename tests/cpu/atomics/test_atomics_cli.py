"""``smemkit atomics analyze|profile|table`` (the owner wires register() into smemkit.cli.main).

``profile`` runs against a stand-in ``ncu`` (a script that prints what ncu prints and exports a
fixture CSV), so the whole path — command line, progress, export, analysis — runs without a GPU.
"""

import argparse
import json
import stat
import sys
from pathlib import Path

import pytest

from smemkit.atomics import cli
from smemkit.errors import InvalidArgumentError, ToolNotFoundError

DATA = Path(__file__).parent / "data"
TABLE = str(DATA / "hand_table.json")


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")


def run(argv):
    parser = argparse.ArgumentParser(prog="smemkit")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.register(sub)
    args = parser.parse_args(argv)
    return args.run(args)


def test_analyze_prints_u_per_sm_verdict_and_evidence(capsys):
    assert run(["atomics", "analyze", str(DATA / "raw_instances.csv"), "--table", TABLE]) == 0
    out = capsys.readouterr().out
    assert "no unit is saturated (busiest: the atomic unit, 0.70)" in out
    assert "not the atomic unit: DRAM is busiest" in out
    assert "U per SM min 0.60 / median 0.70 / max 0.80 (instances, 4 SMs)" in out
    assert "NOT MEASURED" in out  # the hand table is a test fixture


def test_analyze_json(capsys):
    assert run(["atomics", "analyze", str(DATA / "raw_rollups.csv"), "--table", TABLE, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    k = data["kernels"][0]
    assert k["kernel"] == "k_rollup" and k["launches"] == 2 and k["u_atom"]["source"] == "rollups"
    assert data["table"]["source"] == "test-fixture"


def test_analyze_packaged_table_and_options(capsys):
    assert run(["atomics", "analyze", str(DATA / "details_long.csv"), "--per-launch", "--pattern",
                "distinct_banks", "--variant", "alu=add.int32.ret"]) == 0
    out = capsys.readouterr().out  # the packaged table is the H200's measured one
    assert "NOT MEASURED" not in out and "tiny" in out
    with pytest.raises(InvalidArgumentError, match="CLASS=VARIANT"):
        run(["atomics", "analyze", str(DATA / "details_long.csv"), "--variant", "foo=bar"])


def test_table_command(capsys):
    assert run(["atomics", "table", "--table", TABLE, "--variant", "cas.int32.ret"]) == 0
    out = capsys.readouterr().out
    assert "cas.int32.ret" in out and "conflict4" in out and "12.0" in out
    with pytest.raises(InvalidArgumentError, match="no curves"):
        run(["atomics", "table", "--table", TABLE, "--variant", "add.float32.noret"])


def test_profile_without_ncu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cli, "find_tool", lambda name: None)
    with pytest.raises(ToolNotFoundError, match="smemkit atomics analyze"):
        run(["atomics", "profile", "--", "python", "train.py"])


def test_profile_print_command(capsys):
    assert run(["atomics", "profile", "--print-command", "--out", "rep", "--kernel", "hist", "--ncu",
                "/opt/ncu", "--", "python", "app.py", "-v"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith("/opt/ncu --metrics ") and out.endswith("rep.ncu-rep --force-overwrite "
                                                                  "--kernel-name regex:hist python app.py -v")


FAKE_NCU = """#!{python}
import sys
from pathlib import Path
args = sys.argv[1:]
if "--import" in args:
    sys.stdout.write(Path({csv!r}).read_text())
    sys.exit(0)
rep = Path(args[args.index("--export") + 1])
print("==PROF== Connected to process 1 (python)")
print('==PROF== Profiling "hist_inc": 0%....50%....100% - 4 passes')
print("application output line")
print('==PROF== Profiling "hist_add": 0%....50%....100% - 4 passes')
print("==PROF== Disconnected from process 1")
rep.write_bytes(b"NCU-REP")
"""


def test_profile_with_a_stand_in_ncu(tmp_path, capsys):
    fake = tmp_path / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable, csv=str(DATA / "raw_instances.csv")))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    out_base = tmp_path / "prof"
    assert run(["atomics", "profile", "--ncu", str(fake), "--out", str(out_base), "--table", TABLE,
                "--", sys.executable, "-c", "pass"]) == 0
    captured = capsys.readouterr()
    assert "no unit is saturated (busiest: the atomic unit, 0.70)" in captured.out
    assert "application output line" in captured.err and "2 launches profiled" in captured.err
    assert (tmp_path / "prof.csv").read_text() == (DATA / "raw_instances.csv").read_text()


def test_profile_fails_clearly_when_ncu_writes_no_report(tmp_path):
    fake = tmp_path / "ncu"
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint('==ERROR== no GPU')\nsys.exit(1)\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(ToolNotFoundError, match="wrote no report"):
        run(["atomics", "profile", "--ncu", str(fake), "--out", str(tmp_path / "p"), "--table", TABLE,
             "--", "true"])
