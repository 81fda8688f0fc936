"""The service table: interpolation in n, the pattern families, JSON round trips, the placeholder."""

import json
from pathlib import Path

import pytest

from smemkit.atomics.kernels import SUPPORTED
from smemkit.atomics.table import ServiceCurve, ServiceTable, load_table, placeholder_table
from smemkit.errors import InvalidArgumentError

DATA = Path(__file__).parent / "data"


def test_curve_interpolates_throughput_linearly_and_clamps():
    c = ServiceCurve("add.int32.noret", "distinct_banks", "private", 1.0, (1, 4, 16), (10.0, 4.0, 2.0))
    assert c.at(1) == 10.0 and c.at(4) == 4.0 and c.at(16) == 2.0
    assert 1 / c.at(2.5) == pytest.approx((1 / 10 + 1 / 4) / 2)  # halfway: mean of the rates
    assert 1 / c.at(10) == pytest.approx((1 / 4 + 1 / 2) / 2)
    assert c.at(0.5) == 10.0 and c.at(64) == 2.0


@pytest.mark.parametrize(("n", "cycles", "match"), [((1, 2), (1.0,), "equal"),
                                                    ((2, 1), (1.0, 1.0), "increase"),
                                                    ((1, 2), (1.0, 0.0), "positive")])
def test_curve_validation(n, cycles, match):
    with pytest.raises(InvalidArgumentError, match=match):
        ServiceCurve("v", "p", "private", 1.0, n, cycles)


def test_hand_table_families():
    t = load_table(DATA / "hand_table.json")
    assert not t.measured and t.sm_count == 4
    v = "add.int32.noret"
    # mix family, log S linear in log K: same(K=1) = 10, mix4 = 6, distinct_banks(K=32) = 2
    assert t.service_estimate(v, "mix2", 8) == pytest.approx((10 * 6) ** 0.5)  # halfway in log K
    assert t.service_estimate(v, "mix8", 8) == pytest.approx(6 * (2 / 6) ** (1 / 3))
    assert t.family_service(v, "mix", 32, 8) == pytest.approx(2.0)
    # conflict family: distinct_banks(1) = 2, conflict4 = 8, one_bank(32) = 64: S = 2K exactly
    assert t.service_estimate(v, "conflict2", 8) == pytest.approx(4.0)
    assert t.service_estimate(v, "conflict16", 8) == pytest.approx(32.0)
    assert t.service_estimate(v, "conflict4", 8) == 8.0  # measured curves are used as they are
    assert t.per_wavefront(v, 8) == 2.0 and t.per_wavefront("cas.int32.ret", 8) == 3.0
    with pytest.raises(InvalidArgumentError, match="family"):
        t.family_service(v, "stride", 2, 8)


def test_missing_curve_names_what_exists():
    t = load_table(DATA / "hand_table.json")
    with pytest.raises(InvalidArgumentError, match="add.int32.noret/same/private"):
        t.service("add.int32.noret", "same", 4, "shared")
    sparse = ServiceTable("g", "measured")
    sparse.add(ServiceCurve("add.int32.noret", "distinct_banks", "private", 1.0, (1,), (2.0,)))
    with pytest.raises(InvalidArgumentError, match="fewer than two"):
        sparse.service_estimate("add.int32.noret", "mix2", 4)


def test_round_trip_and_results_file(tmp_path):
    t = load_table(DATA / "hand_table.json")
    t.save(tmp_path / "t.json")
    again = load_table(tmp_path / "t.json")
    assert again.to_dict() == t.to_dict()
    (tmp_path / "results.json").write_text(json.dumps({"status": "measured", "service_table": t.to_dict()}))
    assert load_table(tmp_path / "results.json").curves.keys() == t.curves.keys()
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        load_table(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="not JSON"):
        load_table(tmp_path / "bad.json")
    (tmp_path / "wrong.json").write_text(json.dumps({"gpu": "x"}))
    with pytest.raises(InvalidArgumentError, match="not a valid"):
        load_table(tmp_path / "wrong.json")


def test_placeholder_is_complete_and_marked():
    t = placeholder_table()
    assert t.source == "placeholder" and not t.measured
    assert len(t.variants()) == 2 * sum(len(d) for d in SUPPORTED.values())
    assert t.curve("add.float32.noret", "same").sass == "cas_loop"
    # the default (no packaged H200 table yet) is the placeholder
    assert load_table().source in ("placeholder", "measured")
