"""Swizzle(B, M, S) follows CuTe's definition and is a bijection on its period (hypothesis)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from smemkit.errors import InvalidArgumentError
from smemkit.tiling import Access, Pattern, SmemLayout, Swizzle, analyze


@st.composite
def swizzles(draw):
    b = draw(st.integers(0, 5))
    m = draw(st.integers(0, 4))
    s = draw(st.integers(b, 7)) * draw(st.sampled_from([1, -1]))
    if abs(s) < b:
        s = b
    return Swizzle(b, m, s)


@given(swizzles())
def test_swizzle_is_a_bijection_on_its_period(sw):
    images = [sw(o) for o in range(sw.span)]
    assert sorted(images) == list(range(sw.span))


@given(swizzles(), st.integers(0, 2**20))
def test_swizzle_is_an_involution_and_keeps_low_bits_and_block(sw, o):
    assert sw(sw(o)) == o
    assert sw(o) % (1 << sw.M) == o % (1 << sw.M)
    assert sw(o) // sw.span == o // sw.span


def test_cute_definition_by_hand():
    sw = Swizzle(3, 4, 3)  # bits [4,7) ^= bits [7,10)
    assert sw(0b1_0000000) == 0b1_0010000
    assert sw(0b101_0000000) == 0b101_101_0000
    assert sw(0b1111) == 0b1111
    assert Swizzle(5, 0, 5)(32 * 3 + 1) == 32 * 3 + (1 ^ 3)


def test_negative_shift_moves_bits_up():
    assert Swizzle(2, 0, -3)(0b01) == 0b01_001


def test_overlapping_fields_rejected():
    with pytest.raises(InvalidArgumentError, match=r"\|S\| must be >= B"):
        Swizzle(3, 0, 2)
    with pytest.raises(InvalidArgumentError, match="B="):
        Swizzle(-1, 0, 3)


def _column_read(layout: SmemLayout, width: int = 32) -> Pattern:
    return Pattern("t", (32, 1, 1), {"a": layout}, (Access("a", "lane, 0", width),))


def test_xor_swizzle_fixes_the_transpose_column():
    assert analyze(_column_read(SmemLayout((32, 32)))).wavefronts == 32
    assert analyze(_column_read(SmemLayout((32, 32), transform=Swizzle(5, 0, 5)))).wavefronts == 1


def test_swizzle_that_splits_a_vector_is_an_error():
    layout = SmemLayout((32, 32), transform=Swizzle(3, 0, 3))  # XORs into bits 0-2: breaks float4
    with pytest.raises(InvalidArgumentError, match="splits the 128-bit vector"):
        analyze(Pattern("t", (32, 1, 1), {"a": layout}, (Access("a", "lane, 8", 128),)))
    ok = SmemLayout((32, 32), transform=Swizzle(3, 2, 3))
    assert analyze(_column_read(ok, 128)).wavefronts == 4


def test_swizzle_leaving_the_allocation_is_an_error():
    layout = SmemLayout((3, 32), transform=Swizzle(1, 5, -1))  # row 1 -> row 3, past 96 elements
    with pytest.raises(InvalidArgumentError, match="outside the"):
        analyze(Pattern("t", (32, 1, 1), {"a": layout}, (Access("a", "1, lane"),)))


def test_callable_transform_is_accepted():
    layout = SmemLayout((32, 32), transform=lambda o: o ^ ((o >> 5) & 31))
    assert analyze(_column_read(layout)).wavefronts == 1
