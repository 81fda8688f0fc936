"""CuTe-style XOR swizzle ``Swizzle<B, M, S>`` on element offsets.

Definition (CuTe ``include/cute/swizzle.hpp``, restated, not copied): with ``mask = (1 << B) - 1``,
the ``B`` bits starting at bit ``M + max(0, S)`` are XORed into the ``B`` bits starting at bit
``M - min(0, S)``. For the usual ``S > 0`` this is

    f(o) = o ^ ((o & (mask << (M + S))) >> S)

i.e. bits ``[M, M+B)`` of the offset are XORed with bits ``[M+S, M+S+B)``. The low ``M`` bits are
never touched, so a swizzle with ``M >= log2(vector elements)`` keeps vector accesses contiguous.
With ``|S| >= B`` the source and destination bit fields do not overlap, so ``f`` is an involution
and hence a bijection on every aligned block of ``2**(B + M + |S|)`` offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

from smemkit.errors import InvalidArgumentError


@dataclass(frozen=True)
class Swizzle:
    """``Swizzle(B, M, S)``: XOR the ``B`` bits at ``M + S`` into the ``B`` bits at ``M`` (in elements)."""

    B: int
    M: int
    S: int

    def __post_init__(self) -> None:
        for name in ("B", "M"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"Swizzle {name}={value!r}: must be an integer >= 0")
        if not isinstance(self.S, int):
            raise InvalidArgumentError(f"Swizzle S={self.S!r}: must be an integer")
        if abs(self.S) < self.B:
            raise InvalidArgumentError(
                f"Swizzle(B={self.B}, M={self.M}, S={self.S}): |S| must be >= B so the XOR source "
                "and target bit fields do not overlap (CuTe's requirement)"
            )

    @property
    def span(self) -> int:
        """Offsets per period: the swizzle maps each aligned block of this many offsets onto itself."""
        return 1 << (self.B + self.M + abs(self.S))

    def __call__(self, offset: int) -> int:
        mask = (1 << self.B) - 1
        if self.S >= 0:
            return offset ^ ((offset & (mask << (self.M + self.S))) >> self.S)
        return offset ^ ((offset & (mask << self.M)) << -self.S)

    def __str__(self) -> str:
        return f"Swizzle({self.B},{self.M},{self.S})"
