"""The large-batch ring path's chunk arithmetic and path rule (no GPU)."""

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.offload.pinned import TILE_ROWS
from smemkit.offload.ring_gemm import CHUNK_MAX_BYTES, CHUNK_MIN_BYTES, RING_BYTES, host_chunks, ring_layout


@pytest.mark.parametrize(("host_rows", "k", "expected"), [
    (528, 4096, [80, 256, 128, 64]),  # 8 KB rows: the last chunk 64 rows = CHUNK_MIN_BYTES
    (720, 14336, [224, 256, 128, 64, 32, 16]),  # 28 KB rows: 16-row tiles, at most 288 rows (8 MB)
    (3000, 4096, [1024, 1024, 512, 256, 128, 56]),  # 1024 rows = CHUNK_MAX_BYTES; 3000 = 3008 - 8
    (1, 8192, [1]), (0, 2048, []), (100, 64, [100]),
])
def test_chunks_double_from_the_last_one(host_rows, k, expected):
    assert host_chunks(host_rows, k, 2) == expected


def test_a_row_too_wide_for_a_chunk_is_refused():
    from smemkit.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="K = 262152 is too wide"):
        host_chunks(16, 262152, 2)


def test_a_row_too_wide_for_a_slot_is_refused_and_auto_takes_the_kernel():
    from types import SimpleNamespace

    import torch

    from smemkit.offload.gemv import linear_path
    from smemkit.offload.ring_gemm import ring_fits

    assert ring_fits(262144, 2) and not ring_fits(262145, 2)
    wide = SimpleNamespace(host_rows=16, n_hbm=16, shape=(32, 262152), dtype=torch.bfloat16)
    assert linear_path(wide, 512) == "kernel"
    from smemkit.offload.gemv import auto_path

    assert auto_path(512, 1, 1, 1.0, 1.0, k=262152) == "kernel"
    assert auto_path(512, 1, 1, 1.0, 1.0, k=262144) == "ring"


def test_auto_path_against_hand_computed_times():
    from smemkit.offload.gemv import auto_path

    b_g, b_h = 4.0e12, 50e9
    # host 5 MB: 100 us; HBM 100 MB: 25 us. kernel max(109, 35) = 109 < ring max(115, 25) = 115
    assert auto_path(1, 100_000_000, 5_000_000, b_g, b_h) == "kernel"
    # host 10 MB: 200 us. kernel 218 > ring 215 (with the earlier 25 us the kernel: 218 < 225)
    assert auto_path(1, 100_000_000, 10_000_000, b_g, b_h) == "ring"
    # host 30 MB: 600 us. kernel 654 > ring 615
    assert auto_path(8, 100_000_000, 30_000_000, b_g, b_h) == "ring"
    # host 5 MB (100 us), HBM 500 MB (125 us): kernel max(109, 175) > ring max(115, 125)
    assert auto_path(1, 500_000_000, 5_000_000, b_g, b_h) == "ring"
    assert auto_path(9, 100_000_000, 5_000_000, b_g, b_h) == "ring"  # past 8 rows: always the ring
    assert auto_path(64, 100_000_000, 0, b_g, b_h) == "cublas"


def test_linear_path_forced_and_bad_values():
    from types import SimpleNamespace

    import torch

    from smemkit.errors import InvalidArgumentError
    from smemkit.offload.gemv import KERNEL_MAX_ROWS, linear_path

    split = SimpleNamespace(host_rows=32, n_hbm=32, shape=(64, 4096), dtype=torch.bfloat16)
    all_hbm = SimpleNamespace(host_rows=0, n_hbm=64, shape=(64, 4096), dtype=torch.bfloat16)
    assert linear_path(all_hbm, 1) == "cublas" and linear_path(all_hbm, 1000) == "cublas"
    assert linear_path(split, KERNEL_MAX_ROWS + 1) == "ring"
    assert linear_path(all_hbm, 8, "kernel") == "kernel" and linear_path(split, 8, "ring") == "ring"
    with pytest.raises(InvalidArgumentError, match="path='gemm'; allowed: auto, kernel, ring"):
        linear_path(split, 8, "gemm")


@settings(max_examples=300, deadline=None)
@given(host_rows=st.integers(1, 200_000), k=st.integers(8, 262_144).map(lambda v: v // 8 * 8))
def test_chunks_cover_every_host_row_on_aligned_boundaries_and_shrink_to_the_end(host_rows, k):
    sizes = host_chunks(host_rows, k, 2)
    assert sum(sizes) == host_rows and min(sizes) >= 1
    assert all(rows * k * 2 <= CHUNK_MAX_BYTES for rows in sizes)  # at most half the ring
    assert all(rows % TILE_ROWS == 0 for rows in sizes[:-1])  # output columns stay 32-byte aligned
    assert all(a >= b for a, b in pairwise(sizes[1:]))  # non-increasing after the first
    if len(sizes) > 1:  # the last chunk is the least whole-tile chunk of at least CHUNK_MIN_BYTES
        least = max(TILE_ROWS, CHUNK_MIN_BYTES // (k * 2) // TILE_ROWS * TILE_ROWS)
        assert sizes[-1] > least - TILE_ROWS and sizes[-1] <= least


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 64), min_size=1, max_size=40), ring=st.integers(64, 200))
def test_ring_layout_never_lets_a_copy_overwrite_rows_a_pending_gemm_reads(sizes, ring):
    layout = ring_layout(sizes, ring)
    # simulate: chunk j's copy may start once GEMMs 0..wait are done; a GEMM runs after its copy.
    # Every earlier chunk whose elements chunk j overwrites must be among those done GEMMs.
    for j, (offset, wait) in enumerate(layout):
        assert 0 <= offset and offset + sizes[j] <= ring
        for i in range(j):
            o = layout[i][0]
            if o < offset + sizes[j] and offset < o + sizes[i]:
                assert i <= wait, (j, i, layout)
        assert wait < j


def test_ring_layout_packs_until_it_wraps():
    assert ring_layout([4, 4, 4], 12) == [(0, -1), (4, -1), (8, -1)]
    assert ring_layout([8, 4, 4], 12) == [(0, -1), (8, -1), (0, 0)]
    assert ring_layout([6, 6, 2], 12) == [(0, -1), (6, -1), (0, 0)]
    assert RING_BYTES == 2 * CHUNK_MAX_BYTES
    from smemkit.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="does not fit a ring of 12"):
        ring_layout([13], 12)
