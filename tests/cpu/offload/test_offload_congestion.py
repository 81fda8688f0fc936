"""Congestion-window choice on synthetic measurements, the probe's stats arithmetic, and the
optional ``host_congestion`` field of device profiles."""

import dataclasses
import json

import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.hw.profile import DeviceProfile, builtin_profiles
from smemkit.offload import congestion as C
from smemkit.offload.congestion import CongestionPoint, choose_window


def pt(h, w_kb, host, hbm=4.0, alone=4.0):
    return CongestionPoint(h, w_kb * 1024, host, hbm, None, alone)


def test_picks_the_smallest_window_reaching_95_percent_with_least_drop():
    points = [
        pt(1, 16, 10.0), pt(4, 16, 38.0), pt(8, 16, 51.0, hbm=3.96), pt(8, 32, 52.0, hbm=3.90),
        pt(16, 16, 52.5, hbm=3.97), pt(32, 64, 53.0, hbm=3.70),
    ]
    c = choose_window(points)
    # 95 % of 53 = 50.35: 8x16, 8x32, 16x16, 32x64 reach it; least drop 0.75 % (16x16);
    # 8x16 (1.0 %) is within the 0.5-point tolerance and has the smaller H x window
    assert (c["host_ctas"], c["window_bytes"]) == (8, 16384)
    assert c["best_host_gbps"] == 53.0 and c["reaching"] == 4
    assert c["hbm_drop"] == pytest.approx(0.01)


def test_drop_outside_tolerance_loses_even_when_smaller():
    points = [pt(8, 16, 51.0, hbm=3.8), pt(16, 16, 52.0, hbm=3.99)]
    c = choose_window(points)
    assert (c["host_ctas"], c["window_bytes"]) == (16, 16384)


def test_negative_drop_is_noise_and_missing_hbm_counts_as_no_drop():
    points = [pt(4, 8, 50.0, hbm=4.05), CongestionPoint(2, 65536, 50.0, None, None, None)]
    c = choose_window(points)
    assert (c["host_ctas"], c["window_bytes"]) == (4, 8192)  # 32 KB total beats 128 KB total


def test_ties_break_on_total_window_then_fewer_ctas():
    points = [pt(8, 8, 50.0), pt(4, 16, 50.0), pt(2, 32, 50.0)]
    c = choose_window(points)
    assert (c["host_ctas"], c["window_bytes"]) == (2, 32768)


def test_choice_errors():
    with pytest.raises(InvalidArgumentError, match="no congestion"):
        choose_window([])
    with pytest.raises(InvalidArgumentError, match="zero host"):
        choose_window([pt(1, 4, 0.0)])
    with pytest.raises(InvalidArgumentError, match="host_fraction"):
        choose_window([pt(1, 4, 1.0)], host_fraction=0)


def test_point_drop_and_dict():
    p = pt(8, 16, 50.0, hbm=3.8, alone=4.0)
    assert p.hbm_drop == pytest.approx(0.05)
    d = p.as_dict()
    assert d["hbm_drop"] == pytest.approx(0.05) and d["total_window_bytes"] == 8 * 16384
    assert CongestionPoint(1, 4096, 1.0).hbm_drop is None


def test_role_rates_from_stats():
    # two host CTAs: 1 MB each over [0, 100000] ns -> 2e6 B / 1e5 ns = 20 GB/s;
    # one HBM CTA: 4e6 B over 1000 ns -> 4000 GB/s = 4 TB/s
    stats = [(0, 90_000, 1_000_000, 7), (10_000, 100_000, 1_000_000, 1), (5_000, 6_000, 4_000_000, 3)]
    host, hbm = C.role_rates(stats, 2)
    assert host == pytest.approx(20.0) and hbm == pytest.approx(4.0)
    assert C.role_rates(stats[:2], 2)[1] is None
    assert C.role_rates([(0, 0, 0, 0)], 1) == (None, None)


@pytest.mark.parametrize(("window", "lpt"), [(4096, 1), (8192, 2), (16384, 4), (32768, 8), (65536, 16)])
def test_probe_windows(window, lpt):
    assert C.lpt_for_window(window) == lpt


@pytest.mark.parametrize("bad", [0, 2048, 12288, 131072, 4096.0])
def test_probe_window_errors(bad):
    with pytest.raises(InvalidArgumentError, match="probe window"):
        C.lpt_for_window(bad)


def test_profile_field_maps_the_window_to_the_split_kernel():
    f = C.profile_field({"host_ctas": 8, "window_bytes": 65536, "host_gbps": 51.0, "hbm_drop": 0.01},
                        source="test")
    assert f["split_gemv_window_bytes"] == 32768  # the GEMV's largest window
    assert f["host_ctas"] == 8 and f["source"] == "test"


def test_existing_profiles_load_without_the_field_and_round_trip_with_it(tmp_path):
    for p in builtin_profiles().values():
        assert p.host_congestion is None
    base = builtin_profiles()["h200_sxm"]
    field = C.profile_field({"host_ctas": 16, "window_bytes": 16384, "host_gbps": 51.0, "hbm_drop": 0.0},
                            source="synthetic")
    updated = dataclasses.replace(base, host_congestion=field)
    path = tmp_path / "p.json"
    updated.save(path)
    assert json.loads(path.read_text())["host_congestion"]["host_ctas"] == 16
    assert DeviceProfile.load(path) == updated
    # an older profile JSON (no key at all) still loads
    raw = base.to_dict()
    raw.pop("host_congestion")
    assert DeviceProfile.from_dict(raw).host_congestion is None


def test_default_host_config_reads_the_profile(monkeypatch):
    import smemkit.hw.profile as P

    base = builtin_profiles()["h200_sxm"]
    field = C.profile_field({"host_ctas": 12, "window_bytes": 8192, "host_gbps": 50.0, "hbm_drop": 0.0},
                            source="synthetic")
    with_field = dataclasses.replace(base, host_congestion=field)
    monkeypatch.setattr(P, "select_profile", lambda spec=None: (with_field, "test"))
    C._default_for.cache_clear()
    try:
        assert C.default_host_config(0) == (12, 8192)
        assert "host_congestion" in C.default_host_config_source(0)
    finally:
        C._default_for.cache_clear()
    monkeypatch.setattr(P, "select_profile", lambda spec=None: (base, "test"))
    try:
        assert C.default_host_config(0) == (C.DEFAULT_HOST_CTAS, C.DEFAULT_WINDOW)
    finally:
        C._default_for.cache_clear()


def _pt(h, w, gbps, drop):
    return C.CongestionPoint(host_ctas=h, window_bytes=w, host_gbps=gbps, hbm_tbps=4.5 * (1 - drop),
                             host_alone_gbps=gbps, hbm_alone_tbps=4.5)


def test_split_gemv_takes_the_most_host_ctas_within_the_drop_limit():
    """Points of the H200 congestion probe: 8 and 16 CTAs reach 51 GB/s at 16 KB, 16 with a 1.8 %
    HBM drop; 32 CTAs are over the issue's bound of 16 host readers."""
    pts = [_pt(8, 16384, 51.3, 0.010), _pt(16, 16384, 50.9, 0.018), _pt(32, 16384, 51.1, 0.018),
           _pt(16, 8192, 51.1, 0.017), _pt(4, 16384, 37.8, 0.010)]
    choice = C.choose_window(pts)
    assert (choice["host_ctas"], choice["window_bytes"]) == (8, 16384)
    assert C.split_host_ctas(pts, choice) == 16
    assert C.profile_field(choice, source="t", split_ctas=16)["split_gemv_host_ctas"] == 16
    over = [_pt(8, 16384, 51.3, 0.010), _pt(16, 16384, 50.9, 0.05)]  # 16 CTAs cost HBM 5 %
    assert C.split_host_ctas(over, C.choose_window(over)) == 8


def test_h200_probe_runs_pick_the_same_window_despite_noise():
    """Two H200 congestion probes (their points added in commit 659b93b): the drops are
    noise-level (one probe measured negative drops at 32 CTAs); both must pick 8 x 16 KB, and the
    split GEMV 16 x 16 KB."""
    probe_a = [_pt(8, 8192, 39.3, 0.012), _pt(8, 16384, 51.3, 0.010), _pt(16, 8192, 51.1, 0.017),
            _pt(16, 16384, 50.9, 0.018), _pt(32, 4096, 51.3, 0.008), _pt(32, 8192, 50.9, 0.010)]
    probe_b = [_pt(8, 8192, 41.4, 0.011), _pt(8, 16384, 51.4, 0.008), _pt(16, 8192, 51.3, 0.006),
            _pt(16, 16384, 51.1, 0.008), _pt(32, 4096, 51.3, -0.007), _pt(32, 8192, 51.1, -0.012)]
    for pts in (probe_a, probe_b):
        choice = C.choose_window(pts)
        assert (choice["host_ctas"], choice["window_bytes"]) == (8, 16384)
        assert C.split_host_ctas(pts, choice) == 16
