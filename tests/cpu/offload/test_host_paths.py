"""The host-read paths probe's argument checks and stats arithmetic (no GPU)."""

import numpy as np
import pytest

from smemkit.errors import InvalidArgumentError
from smemkit.offload.host_paths import (
    ALIGN_SLACK,
    MAX_CTAS,
    MAX_STAGES,
    HostPathProbe,
    PathPoint,
    check_ring,
    check_tile,
    link_rate,
    xor_words,
)


def test_ring_size_and_limits():
    assert check_ring(16384, 4, 232448, "chunk") == 4 * 16384 + ALIGN_SLACK
    with pytest.raises(InvalidArgumentError, match="stages must be an integer in 1..8"):
        check_ring(16384, MAX_STAGES + 1, 232448, "chunk")
    with pytest.raises(InvalidArgumentError, match="chunk must be a positive multiple of 16"):
        check_ring(1000, 2, 232448, "chunk")
    with pytest.raises(InvalidArgumentError, match=r"need 263168 B .* allows 232448 B"):
        check_ring(32768, 8, 232448, "tile")


def test_tile_boxes():
    assert check_tile(256, 64, 1) == 256
    assert check_tile(256, 64, 4) == 64
    with pytest.raises(InvalidArgumentError, match="at most 256 rows"):
        check_tile(512, 64, 1)
    with pytest.raises(InvalidArgumentError, match="multiple of P = 4"):
        check_tile(66, 64, 4)
    with pytest.raises(InvalidArgumentError, match="cluster size P must be 1, 2 or 4"):
        check_tile(256, 64, 8)
    with pytest.raises(InvalidArgumentError, match="tile_cols must be 64"):
        check_tile(64, 96, 1)
    with pytest.raises(InvalidArgumentError, match="multiple of 8 rows"):
        check_tile(48, 64, 4)  # 12-row boxes would start 1536 B apart, not 1024-aligned
    assert check_tile(12, 256, 4) == 3  # unswizzled boxes need only 16-byte rows
    with pytest.raises(InvalidArgumentError, match="cluster size P"):
        check_tile(64, 64, True)
    with pytest.raises(InvalidArgumentError, match="tile_cols"):
        check_tile(64, 64.0, 1)


def test_xor_words_matches_a_loop():
    data = np.arange(64, dtype=np.uint8) * 7
    words = data.view(np.uint32)
    expect = 0
    for w in words:
        expect ^= int(w)
    assert xor_words(data) == expect
    assert xor_words(np.zeros(0, dtype=np.uint8)) == 0


def test_link_rate_spans_first_start_to_last_end():
    # two CTAs: [100, 1100) ns and [300, 2100) ns, 3000 + 5000 bytes landed
    stats = np.array([[100, 1100, 3000, 0], [300, 2100, 5000, 0]], dtype=np.uint64)
    assert link_rate(stats) == pytest.approx((8000 / 2000, 8000 / 2000))
    # multicast over P = 2: the link carried half of what landed
    assert link_rate(stats, P=2) == pytest.approx((2.0, 4.0))
    with pytest.raises(InvalidArgumentError, match="not positive"):
        link_rate(np.array([[5, 5, 1, 0]], dtype=np.uint64))


def test_point_reports_bytes_in_flight():
    p = PathPoint("bulk", 16, 16384, 4, 1, 50.0, 50.0, True)
    assert p.in_flight_bytes_per_cta == 65536
    assert p.as_dict()["in_flight_bytes_per_cta"] == 65536


def test_cta_count_stays_inside_the_stats_buffer():
    HostPathProbe._check_ctas(MAX_CTAS, 1, 10 ** 6, "chunk")
    HostPathProbe._check_ctas(MAX_CTAS, 4, 10 ** 6, "tile")
    for ctas, P in ((MAX_CTAS + 2, 2), (MAX_CTAS + 4, 4), (0, 1), (3, 2), (True, 1), (8, 1)):
        pieces = 7 if ctas == 8 else 10 ** 6  # 8 CTAs for 7 chunks: one would idle
        with pytest.raises(InvalidArgumentError, match="ctas must be a multiple"):
            HostPathProbe._check_ctas(ctas, P, pieces, "chunk")
