"""Nsight Compute CSV parsing and the per-kernel analysis, on the synthetic fixtures in data/."""

from pathlib import Path

import pytest

from smemkit.atomics.analysis import analyze, instruction_classes, merge_launches
from smemkit.atomics.table import load_table
from smemkit.errors import InvalidArgumentError, ToolNotFoundError
from smemkit.hw import ncu

DATA = Path(__file__).parent / "data"


@pytest.fixture
def table():
    return load_table(DATA / "hand_table.json")


def test_numbers_and_cells():
    assert ncu.parse_number("1,234,567") == 1234567
    assert ncu.parse_number("12.50") == 12.5 and ncu.parse_number("1e-3") == 0.001
    assert ncu.parse_number("n/a") is None and ncu.parse_number("") is None
    with pytest.raises(InvalidArgumentError):
        ncu.parse_number("CachePreferNone")
    assert ncu.parse_cell("1,000 (250;250;500)") == (1000.0, (250.0, 250.0, 500.0))
    assert ncu.parse_cell("(1;2)") == (None, (1.0, 2.0))
    assert ncu.parse_cell("42") == (42.0, None)
    assert ncu.unit_factor("usecond") == (1e3, "nsecond") and ncu.unit_factor("Kbyte") == (1e3, "byte")


def test_raw_csv_with_instances():
    recs = ncu.parse_csv((DATA / "raw_instances.csv").read_text())
    assert [r.kernel.split("(")[0] for r in recs] == ["hist_inc", "hist_add"]
    r = recs[0]
    assert (r.id, r.block, r.cc) == ("0", "(512, 1, 1)", "9.0")
    assert r.value(ncu.INST_ATOM) == 1_000_000
    assert r.instances(f"{ncu.WAVEFRONTS}.sum") == (300_000, 350_000, 350_000, 400_000)
    assert r.metrics[f"{ncu.CYCLES}.sum"].unit == "cycle"
    assert r.value(ncu.OTHER_UNITS["dram"]) == 20.0 and r.value(ncu.SM_COUNT) == 4


def test_raw_csv_skips_prof_lines_and_has_no_instances():
    recs = ncu.parse_csv((DATA / "raw_rollups.csv").read_text())
    assert [r.id for r in recs] == ["0", "1", "2"]
    assert recs[0].instances(f"{ncu.CYCLES}.sum") is None
    assert recs[1].value(ncu.DURATION) == 3000


def test_details_long_form_and_units():
    (r,) = ncu.parse_csv((DATA / "details_long.csv").read_text())
    assert r.kernel == "tiny(int*)"
    assert r.value(ncu.INST_ALU) == 2000 and r.value(f"{ncu.WAVEFRONTS}.sum") == 4000
    assert r.value(ncu.DURATION) == pytest.approx(12_500.0)  # 12.5 us in ns
    assert "launch__func_cache_config" not in r.metrics  # a text value is skipped


def test_no_header_is_a_clear_error():
    with pytest.raises(InvalidArgumentError, match="no Nsight Compute CSV header"):
        ncu.parse_csv("==ERROR== The application returned an error code (1)\n")


def test_exact_per_sm_utilization_and_verdicts(table):
    res = {a.kernel.split("(")[0]: a for a in analyze(ncu.read_report(DATA / "raw_instances.csv"), table)}
    inc = res["hist_inc"]
    # w = 1.4M / 1M = 1.4; S = 2 cycles/wavefront * 1.4 = 2.8; U_i = (W_i / 1.4) / 1e6 * 2.8 = 2e-6 W_i
    assert inc.wavefronts_per_inst == pytest.approx(1.4) and inc.service_cycles == pytest.approx(2.8)
    assert inc.conflicts_per_inst == pytest.approx(0.4)
    u = inc.u_atom
    assert (u.source, u.sms) == ("instances", 4)
    assert (u.min, u.median, u.max) == pytest.approx((0.6, 0.7, 0.8))
    # median 0.70 < 0.8 and nothing else busy: latency-bound, with the busiest SM flagged
    assert not inc.verdict.atomic_bound and inc.verdict.bottleneck == "none"
    assert any("busiest SM's atomic unit reaches 0.80" in e for e in inc.verdict.evidence)
    add = res["hist_add"]
    assert add.u_atom.median == pytest.approx(0.5)  # 250k / 1M * 2
    assert not add.verdict.atomic_bound and add.verdict.bottleneck == "dram"
    assert any("NOT MEASURED" in n for n in inc.notes)  # the hand table is no measurement


def test_rollup_bounds_merge_and_cas_share(table):
    res = analyze(ncu.read_report(DATA / "raw_rollups.csv"), table)
    k = next(a for a in res if a.kernel == "k_rollup")
    assert k.launches == 2
    assert k.instructions == {"atom": 0.0, "alu": 1_000_000, "cas": 200_000}
    assert k.cas_fraction == pytest.approx(1 / 6)
    s = 2.0 * 5 / 6 + 3.0 / 6  # classes add: alu at 2 cycles, cas at 3, w = 1
    assert k.service_cycles == pytest.approx(s)
    u = k.u_atom
    assert u.source == "rollups"
    assert u.median == pytest.approx(1.2e6 / 4.8e6 * s)
    assert u.min == pytest.approx(200_000 / 1.4e6 * s) and u.max == pytest.approx(400_000 / 1.0e6 * s)
    assert k.verdict.bottleneck == "none" and any("imbalance" in e for e in k.verdict.evidence)
    # duration-weighted issue utilization: (20 * 1000 + 40 * 3000) / 4000 = 35 %
    assert k.others["issue"] == pytest.approx(0.35)
    none = next(a for a in res if a.kernel == "no_atomics_kernel")
    assert none.verdict is None and "no shared-memory atomic" in none.notes[0]


def test_per_launch_and_pattern(table):
    recs = ncu.read_report(DATA / "raw_rollups.csv")
    res = analyze(recs, table, per_launch=True)
    assert [a.kernel for a in res][:2] == ["k_rollup [launch 0]", "k_rollup [launch 1]"]
    res = analyze(recs[:1], table, pattern="distinct_banks")
    s = (500_000 * 2.0 + 100_000 * 3.0) / 600_000  # distinct_banks: add 2, cas 3 cycles
    assert res[0].service_cycles == pytest.approx(s)
    # conflict4 prices 4 wavefronts per instruction where the counters show 1: U = 2.17, impossible
    with pytest.raises(InvalidArgumentError, match="inconsistent.*--pattern conflict4"):
        analyze(recs[:1], table, pattern="conflict4")


def test_inclusive_counters_detected():
    assert instruction_classes(300.0, 200.0, 100.0) == ({"atom": 0.0, "alu": 200.0, "cas": 100.0}, True)
    assert instruction_classes(50.0, 200.0, 100.0) == ({"atom": 50.0, "alu": 200.0, "cas": 100.0}, False)


def test_merge_sums_instances():
    a = ncu.LaunchRecord("0", "k", metrics={"x.sum": ncu.MetricValue(3.0, "", (1.0, 2.0))})
    b = ncu.LaunchRecord("1", "k", metrics={"x.sum": ncu.MetricValue(7.0, "", (3.0, 4.0))})
    m = merge_launches([a, b])
    assert m.value("x.sum") == 10.0 and m.instances("x.sum") == (4.0, 6.0) and m.id == "0,1"


def test_profile_and_import_commands():
    cmd = ncu.profile_command(["python", "app.py", "--n", "3"], "out.ncu-rep", kernel_regex="hist_",
                              launch_count=5)
    assert cmd[0] == "ncu" and cmd[-4:] == ["python", "app.py", "--n", "3"]
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--metrics") + 1].split(",") == list(ncu.PROFILE_METRICS)
    assert "regex:hist_" in cmd and cmd[cmd.index("--launch-count") + 1] == "5"
    with pytest.raises(InvalidArgumentError, match="no command to profile"):
        ncu.profile_command([], "x")
    imp = ncu.import_command("r.ncu-rep")
    assert imp[:3] == ["ncu", "--import", "r.ncu-rep"] and "values" in imp and "raw" in imp


def test_binary_report_without_ncu(tmp_path, monkeypatch):
    monkeypatch.setattr(ncu, "find_tool", lambda name: None)
    rep = tmp_path / "r.ncu-rep"
    rep.write_bytes(b"\0")
    with pytest.raises(ToolNotFoundError, match="ncu is not installed"):
        ncu.read_report(rep)
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        ncu.read_report(tmp_path / "missing.csv")
