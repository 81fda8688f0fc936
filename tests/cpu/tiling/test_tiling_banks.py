"""The wavefront rule of SPEC §4 on hand-computed warp instructions, plus invariants (hypothesis)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError
from smemkit.tiling.banks import warp_access


def words(ws, width=32):
    """Lane i reads word ws[i] (byte address 4 * word)."""
    return warp_access([None if w is None else 4 * w for w in ws], width)


def test_consecutive_words_are_one_wavefront():
    r = words(range(32))
    assert (r.wavefronts, r.ideal, r.degree, r.broadcasts) == (1, 1, 1.0, 0)


def test_broadcast_of_one_word_is_one_wavefront():
    r = words([7] * 32)
    assert (r.wavefronts, r.ideal, r.broadcasts) == (1, 1, 31)


def test_column_of_a_32x32_fp32_tile_is_32_way():
    r = words([32 * lane for lane in range(32)])
    assert (r.wavefronts, r.ideal, r.degree) == (32, 1, 32.0)
    assert r.phases[0].banks[0] and len(r.phases[0].banks[0]) == 32


def test_column_with_one_word_padding_is_conflict_free():
    assert words([33 * lane for lane in range(32)]).wavefronts == 1


@pytest.mark.parametrize("stride,expected", [(1, 1), (2, 2), (3, 1), (4, 4), (8, 8), (16, 16), (17, 1)])
def test_strided_fp32(stride, expected):
    assert words([stride * lane for lane in range(32)]).wavefronts == expected


def test_two_words_in_one_bank_cost_two_even_with_broadcast_elsewhere():
    ws = list(range(32))
    ws[1] = 32  # lane 1 now shares bank 0 with lane 0, on a different word
    ws[2] = 0   # lane 2 reads lane 0's word: a broadcast, no extra wavefront
    r = words(ws)
    assert (r.wavefronts, r.broadcasts) == (2, 1)


def test_128bit_contiguous_per_lane_is_4_ideal():
    r = warp_access([16 * lane for lane in range(32)], 128)
    assert (r.wavefronts, r.ideal, r.degree) == (4, 4, 1.0)
    assert [len(p.lanes) for p in r.phases] == [8, 8, 8, 8]


def test_64bit_contiguous_per_lane_is_2_ideal():
    r = warp_access([8 * lane for lane in range(32)], 64)
    assert (r.wavefronts, r.ideal) == (2, 2)


def test_64bit_at_16_byte_stride_is_2_way_per_half_warp():
    # words 4i, 4i+1 for i in 0..15: banks repeat every 8 lanes -> 2 words per bank per half-warp
    r = warp_access([16 * lane for lane in range(32)], 64)
    assert (r.wavefronts, r.ideal) == (4, 2)


def test_128bit_same_row_per_quarter_is_8_way():
    # 8 lanes of a quarter-warp read 8 rows of a 128-byte-wide tile at the same column
    r = warp_access([128 * lane for lane in range(32)], 128)
    assert (r.wavefronts, r.ideal) == (32, 4)


def test_partial_warps_lower_the_ideal():
    assert warp_access([16 * i for i in range(8)], 128).ideal == 1
    assert warp_access([8 * i for i in range(16)], 64).ideal == 1
    empty = warp_access([None] * 32, 32)
    assert (empty.wavefronts, empty.ideal, empty.degree) == (0, 0, 1.0)


def test_16bit_lanes_on_two_halves_of_a_word_do_not_conflict():
    r = warp_access([2 * lane for lane in range(32)], 16)  # consecutive fp16
    assert (r.wavefronts, r.ideal, r.broadcasts) == (1, 1, 16)


def test_misaligned_and_bad_width_are_rejected():
    with pytest.raises(InvalidArgumentError, match="aligned to 16 bytes"):
        warp_access([8] + [None] * 31, 128)
    with pytest.raises(InvalidArgumentError, match="width"):
        warp_access([0] * 32, 48)
    with pytest.raises(InvalidArgumentError, match="at most 32"):
        warp_access([0] * 33, 32)


WIDTH = st.sampled_from([16, 32, 64, 128])


@st.composite
def instructions(draw):
    width = draw(WIDTH)
    size = width // 8
    lanes = draw(st.lists(st.one_of(st.none(), st.integers(0, 4096)), min_size=32, max_size=32))
    return width, [None if a is None else a * size for a in lanes]


@given(instructions())
def test_wavefronts_never_below_ideal(inst):
    width, addrs = inst
    r = warp_access(addrs, width)
    assert r.wavefronts >= r.ideal
    assert r.degree >= 1.0
    assert r.wavefronts <= sum(p.requests for p in r.phases)


@given(instructions(), st.integers(1, 64))
def test_shifting_by_whole_bank_rows_changes_nothing(inst, rows):
    width, addrs = inst
    shifted = [None if a is None else a + 128 * rows for a in addrs]
    a, b = warp_access(addrs, width), warp_access(shifted, width)
    assert (a.wavefronts, a.ideal, a.broadcasts) == (b.wavefronts, b.ideal, b.broadcasts)


@given(st.permutations(range(32)), st.integers(0, 64))
def test_any_permutation_of_32_banks_is_one_wavefront(perm, row):
    assert words([32 * row + b for b in perm]).wavefronts == 1


def test_pair_merge_measured_on_h200():
    """Nsight Compute on the H200 (benchmarks/results/h200/tiling.json): aligned lane pairs on one
    address merge the 64-bit half-warps (and the 128-bit quarter-warps two by two)."""
    assert warp_access([0] * 32, 64).wavefronts == 1  # bcast_fp64_all_same: 1, not 2
    assert warp_access([8 * (lane // 2) for lane in range(32)], 64).wavefronts == 1  # bcast_fp64_pairs
    assert warp_access([8 * (lane % 16) for lane in range(32)], 64).wavefronts == 2  # halves: no merge
    assert warp_access([0] * 32, 128).wavefronts == 2  # bcast_f4_all_same: 2, not 4
    assert warp_access([16 * (lane % 8) for lane in range(32)], 128).wavefronts == 4  # quarters: no merge
    shifted = [8 * (((lane + 1) // 2) % 16) for lane in range(32)]
    assert warp_access(shifted, 64).wavefronts == 2  # pairs (2k-1, 2k) are not aligned pairs


def test_stores_do_not_pair_merge():
    pairs = [8 * (lane // 2) for lane in range(32)]
    assert warp_access(pairs, 64, "load").wavefronts == 1
    assert warp_access(pairs, 64, "store").wavefronts == 2  # bcast_fp64_store_pairs on the H200
    with pytest.raises(InvalidArgumentError, match="op="):
        warp_access(pairs, 64, "atomic")
