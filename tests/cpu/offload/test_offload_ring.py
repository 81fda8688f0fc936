"""The large-batch ring path's chunk arithmetic and path rule (no GPU)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smemkit.offload.pinned import TILE_ROWS
from smemkit.offload.ring_gemm import RING_SLOT_BYTES, host_chunks


@pytest.mark.parametrize(("host_rows", "k"), [(720, 4096), (14336, 4096), (0, 2048), (16, 64), (16, 8192),
                                               (28672, 8192), (48, 524288)])
def test_chunks_cover_the_host_rows_within_one_slot(host_rows, k):
    chunks, chunk = host_chunks(host_rows, k, 2)
    if not host_rows:
        assert (chunks, chunk) == (0, 0)
        return
    assert chunks >= 1 and chunk * k * 2 <= RING_SLOT_BYTES
    assert chunks * chunk >= host_rows
    assert chunk % TILE_ROWS == 0  # aligned output columns (the split's n_hbm is a multiple of 16 too)
    slot_rows = RING_SLOT_BYTES // (k * 2) // TILE_ROWS * TILE_ROWS
    assert chunks == math.ceil(host_rows / slot_rows)  # as few chunks as the ring allows


def test_a_row_too_wide_for_a_slot_is_refused_and_auto_takes_the_kernel():
    from types import SimpleNamespace

    import torch

    from smemkit.errors import InvalidArgumentError
    from smemkit.offload.gemv import linear_path
    from smemkit.offload.ring_gemm import ring_fits

    assert ring_fits(524288, 2) and not ring_fits(524289, 2)
    with pytest.raises(InvalidArgumentError, match="K = 524296 is too wide"):
        host_chunks(16, 524296, 2)
    wide = SimpleNamespace(host_rows=16, n_hbm=16, shape=(32, 524296), dtype=torch.bfloat16)
    assert linear_path(wide, 512) == "kernel"
    from smemkit.offload.gemv import auto_path

    assert auto_path(512, 1, 1, 1.0, 1.0, k=524296) == "kernel"
    assert auto_path(512, 1, 1, 1.0, 1.0, k=524288) == "ring"


def test_auto_path_against_hand_computed_times():
    from smemkit.offload.gemv import auto_path

    b_g, b_h = 4.0e12, 50e9
    # host 5 MB: 100 us; HBM 100 MB: 25 us. kernel max(109, 35) = 109 < ring max(115, 25) = 115
    assert auto_path(1, 100_000_000, 5_000_000, b_g, b_h) == "kernel"
    # host 10 MB: 200 us. kernel 218 > ring 215, decided by the ring's 15 us (25 us would pick the kernel)
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
    from smemkit.offload.gemv import linear_path
    from smemkit.offload.split_rule import KERNEL_MAX_ROWS

    split = SimpleNamespace(host_rows=32, n_hbm=32, shape=(64, 4096), dtype=torch.bfloat16)
    all_hbm = SimpleNamespace(host_rows=0, n_hbm=64, shape=(64, 4096), dtype=torch.bfloat16)
    assert linear_path(all_hbm, 1) == "cublas" and linear_path(all_hbm, 1000) == "cublas"
    assert linear_path(split, KERNEL_MAX_ROWS + 1) == "ring"
    assert linear_path(all_hbm, 8, "kernel") == "kernel" and linear_path(split, 8, "ring") == "ring"
    with pytest.raises(InvalidArgumentError, match="path='gemm'; allowed: auto, kernel, ring"):
        linear_path(split, 8, "gemm")


@settings(max_examples=300, deadline=None)
@given(host_rows=st.integers(1, 200_000), k=st.integers(8, 524_288).map(lambda v: v // 8 * 8))
def test_chunks_cover_every_host_row_on_aligned_boundaries_within_a_slot(host_rows, k):
    chunks, chunk = host_chunks(host_rows, k, 2)
    assert chunk * k * 2 <= RING_SLOT_BYTES  # a host chunk fits one slot
    assert chunks * chunk >= host_rows and (chunks - 1) * chunk < host_rows  # no empty chunk
    assert chunk % TILE_ROWS == 0  # output columns stay 32-byte aligned
