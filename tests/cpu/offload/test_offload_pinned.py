"""Pinned memory, weight splitting and the split op's argument checks, without a GPU."""

import types

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from smemkit.errors import InvalidArgumentError, SmemkitError, UnsupportedDeviceError
from smemkit.offload import gemv
from smemkit.offload.pinned import (
    TILE_ROWS,
    PinnedBuffer,
    PinnedMemoryError,
    SplitShape,
    SplitWeight,
    available_host_bytes,
    check_pinned_request,
    check_weight,
    host_rows_for_ratio,
)

NO_GPU = not torch.cuda.is_available()


@pytest.mark.parametrize(("n", "r", "rows"), [
    (4096, 0.0, 0), (4096, 1.0, 4096), (4096, 0.0131, 48), (4096, 0.0137, 64), (4096, 0.5, 2048),
    (4096, 0.001, 0),  # 4 rows: nearer 0 than 16
    (7, 0.4, 0), (7, 0.6, 7), (7, 0.5, 0),  # fewer rows than a tile: all or nothing, tie -> HBM
    (100, 0.05, 4),  # N - 96 = 4 host rows (the HBM part stays a multiple of 16)
    (100, 0.25, 20), (1, 1.0, 1), (1, 0.3, 0),
])
def test_host_rows_for_ratio(n, r, rows):
    assert host_rows_for_ratio(n, r) == rows


@given(n=st.integers(1, 50_000), r=st.floats(0, 1))
def test_host_rows_keep_the_hbm_part_on_tile_boundaries(n, r):
    h = host_rows_for_ratio(n, r)
    assert 0 <= h <= n
    assert h in (0, n) or (n - h) % TILE_ROWS == 0
    # nearest allowed count: never further than a tile from the request (or the tiny-N all/none case)
    assert abs(h - r * n) <= max(TILE_ROWS / 2, min(r * n, n - r * n)) + 1e-9


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), float("inf"), "0.5", None, True])
def test_ratio_is_checked(bad):
    with pytest.raises(InvalidArgumentError, match="ratio"):
        host_rows_for_ratio(100, bad)


def test_split_shape_bytes_and_ratio():
    s = SplitShape.of(4096, 14336, 0.25)
    assert (s.host_rows, s.n_hbm, s.ratio) == (1024, 3072, 0.25)
    assert s.host_bytes == 1024 * 14336 * 2


def test_check_weight_errors_name_the_problem():
    with pytest.raises(InvalidArgumentError, match="multiple of 8"):
        check_weight(torch.zeros(4, 12, dtype=torch.bfloat16))
    with pytest.raises(InvalidArgumentError, match="bfloat16, float16"):
        check_weight(torch.zeros(4, 16))
    with pytest.raises(InvalidArgumentError, match="2-D"):
        check_weight(torch.zeros(16, dtype=torch.float16))
    with pytest.raises(InvalidArgumentError, match="torch.Tensor"):
        check_weight([[1.0]])
    with pytest.raises(InvalidArgumentError, match="empty"):
        check_weight(torch.zeros(0, 16, dtype=torch.float16))


def test_split_weight_checks_arguments_before_touching_a_device():
    w = torch.zeros(32, 20, dtype=torch.bfloat16)
    with pytest.raises(InvalidArgumentError, match="K = 20 must be a multiple of 8"):
        SplitWeight(w, 0.5)
    with pytest.raises(InvalidArgumentError, match="ratio"):
        SplitWeight(torch.zeros(32, 16, dtype=torch.bfloat16), 2.0)
    with pytest.raises(InvalidArgumentError, match="float32"):
        SplitWeight(torch.zeros(32, 16), 0.5)


def test_pinned_request_larger_than_the_host_fails_first_naming_the_size():
    huge = 1 << 62
    with pytest.raises(PinnedMemoryError, match=str(huge)) as err:
        check_pinned_request(huge)
    assert isinstance(err.value, SmemkitError) and isinstance(err.value, MemoryError)
    if available_host_bytes() is not None:
        with pytest.raises(PinnedMemoryError, match="GiB"):
            PinnedBuffer(huge)  # before any CUDA call: works without a GPU
        w = torch.empty(1, 8, dtype=torch.bfloat16).expand(1 << 40, 8)  # a huge weight, no storage
        with pytest.raises(PinnedMemoryError, match="host part of a"):
            SplitWeight(w, 1.0)


@pytest.mark.parametrize("bad", [-1, 1.5, "8", True])
def test_pinned_size_must_be_a_byte_count(bad):
    with pytest.raises(InvalidArgumentError, match="size"):
        PinnedBuffer(bad)


def test_zero_byte_pinned_buffer_needs_no_gpu():
    with PinnedBuffer(0) as buf:
        assert buf.tensor(torch.bfloat16, (0, 8)).shape == (0, 8)
        assert buf.device_ptr == 0 and not buf.freed


@pytest.mark.skipif(not NO_GPU, reason="checks the no-GPU error")
def test_split_weight_without_a_gpu_is_a_clear_error():
    with pytest.raises(UnsupportedDeviceError, match="no CUDA GPU"):
        SplitWeight(torch.zeros(32, 16, dtype=torch.bfloat16), 0.5)


def _stub(n=64, k=32, dtype=torch.bfloat16):
    return types.SimpleNamespace(shape=(n, k), dtype=dtype, device=torch.device("cuda", 0), n_hbm=n)


def test_split_linear_argument_errors_without_a_gpu():
    w = _stub()
    with pytest.raises(InvalidArgumentError, match="SplitWeight"):
        gemv.check_split_args(torch.zeros(2, 32), torch.zeros(64, 32))
    with pytest.raises(InvalidArgumentError, match=r"shape \(\.\.\., 32\)"):
        gemv.check_split_args(torch.zeros(2, 16, dtype=torch.bfloat16), w)
    with pytest.raises(InvalidArgumentError, match="x must be on a CUDA device"):
        gemv.check_split_args(torch.zeros(2, 32, dtype=torch.bfloat16), w)
    with pytest.raises(InvalidArgumentError, match="torch.Tensor"):
        gemv.check_split_args([[0.0] * 32], w)
    with pytest.raises(InvalidArgumentError, match="SplitWeight"):
        gemv.split_linear(torch.zeros(2, 32, dtype=torch.bfloat16), "weight")


def test_offloaded_linear_rejects_what_the_kernel_cannot_run():
    with pytest.raises(InvalidArgumentError, match="bfloat16, float16"):
        gemv.OffloadedLinear.from_linear(nn.Linear(16, 8), 0.5)  # float32
    with pytest.raises(InvalidArgumentError, match="multiple of 8"):
        gemv.OffloadedLinear.from_linear(nn.Linear(12, 8).to(torch.bfloat16), 0.5)
    with pytest.raises(InvalidArgumentError, match="nn.Linear"):
        gemv.OffloadedLinear.from_linear(nn.Conv1d(4, 4, 1), 0.5)
    with pytest.raises(InvalidArgumentError, match="SplitWeight"):
        gemv.OffloadedLinear(torch.zeros(8, 16, dtype=torch.bfloat16))
