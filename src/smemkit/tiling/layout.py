"""A shared-memory array as the kernel declares it: shape, element type, row padding, index transform.

Element ``(i0, ..., ik)`` sits at the padded row-major offset ``o = sum(i_d * stride_d)`` where the
innermost stride is 1 and the row stride is ``shape[-1] + pad`` (what ``T a[R][C + pad]`` gives).
The optional transform (a :class:`~smemkit.tiling.swizzle.Swizzle` or any ``int -> int`` callable)
maps ``o`` to the physical element offset ``f(o)``; the byte address is ``base + f(o) * itemsize``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from smemkit.errors import InvalidArgumentError, is_int
from smemkit.tiling.swizzle import Swizzle

DTYPE_BYTES: dict[str, int] = {"fp16": 2, "bf16": 2, "fp32": 4, "int32": 4, "fp64": 8}
_ALIASES = {"float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32",
            "float": "fp32", "int": "int32", "float64": "fp64", "double": "fp64"}

Transform = Swizzle | Callable[[int], int]


def canonical_dtype(dtype: str) -> str:
    """``dtype`` spelled the way smemkit reports it; InvalidArgumentError lists the allowed names."""
    name = _ALIASES.get(str(dtype).lower(), str(dtype).lower())
    if name not in DTYPE_BYTES:
        raise InvalidArgumentError(f"dtype={dtype!r}: allowed are {', '.join(DTYPE_BYTES)} "
                                   f"(or {', '.join(_ALIASES)})")
    return name


@dataclass(frozen=True)
class SmemLayout:
    """One ``__shared__`` array. ``base`` is its byte offset in the block's shared memory."""

    shape: tuple[int, ...]
    dtype: str = "fp32"
    pad: int = 0
    transform: Transform | None = None
    base: int = 0

    def __post_init__(self) -> None:
        shape = tuple(self.shape) if isinstance(self.shape, Sequence) else (self.shape,)
        if not shape or any(not isinstance(n, int) or n <= 0 for n in shape):
            raise InvalidArgumentError(f"shape={self.shape!r}: must be one or more positive integers")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", canonical_dtype(self.dtype))
        if not isinstance(self.pad, int) or self.pad < 0:
            raise InvalidArgumentError(f"pad={self.pad!r}: must be an integer >= 0 (elements per row)")
        if not isinstance(self.base, int) or self.base < 0 or self.base % 16:
            raise InvalidArgumentError(f"base={self.base!r}: must be a byte offset >= 0, a multiple of 16")
        if self.transform is not None and not callable(self.transform):
            raise InvalidArgumentError("transform: must be a Swizzle, a callable int -> int, or None")

    @property
    def itemsize(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def row_stride(self) -> int:
        """Elements between consecutive rows (innermost dimension plus padding)."""
        return self.shape[-1] + self.pad

    @cached_property
    def strides(self) -> tuple[int, ...]:
        strides = [1]
        running = self.row_stride
        for n in reversed(self.shape[:-1]):
            strides.append(running)
            running *= n
        return tuple(reversed(strides))

    @cached_property
    def elements(self) -> int:
        """Elements allocated, padding included."""
        return math.prod(self.shape[:-1]) * self.row_stride

    @property
    def nbytes(self) -> int:
        return self.elements * self.itemsize

    @property
    def padding_bytes(self) -> int:
        """Bytes the padding adds over the unpadded array."""
        return (self.elements - math.prod(self.shape)) * self.itemsize

    def replace(self, **changes) -> SmemLayout:
        return dataclasses.replace(self, **changes)

    def offset(self, index: int | Sequence[int]) -> int:
        """Padded row-major element offset of a logical index (before the transform).

        A tuple is a multi-index; a bare integer is a flat index into the *unpadded* shape.
        """
        if is_int(index):
            flat = index
            if not 0 <= flat < math.prod(self.shape):
                raise InvalidArgumentError(f"flat index {flat} is outside shape {self.shape}")
            multi = []
            for n in reversed(self.shape):
                multi.append(flat % n)
                flat //= n
            index = tuple(reversed(multi))
        index = tuple(index)
        if len(index) != len(self.shape) or not all(isinstance(i, int) for i in index):
            raise InvalidArgumentError(f"index {index!r} does not match shape {self.shape}: "
                                       f"give {len(self.shape)} integers")
        if any(not 0 <= i < n for i, n in zip(index, self.shape, strict=True)):
            raise InvalidArgumentError(f"index {index} is outside shape {self.shape}")
        return sum(i * s for i, s in zip(index, self.strides, strict=True))

    def physical(self, offset: int) -> int:
        """Element offset after the transform; it must stay inside the allocation."""
        if self.transform is None:
            return offset
        phys = int(self.transform(offset))
        if not 0 <= phys < self.elements:
            raise InvalidArgumentError(
                f"transform {self.transform} maps offset {offset} to {phys}, outside the "
                f"{self.elements} elements allocated for shape {self.shape} with pad {self.pad}"
            )
        return phys

    def byte_address(self, index: int | Sequence[int]) -> int:
        return self.base + self.physical(self.offset(index)) * self.itemsize

    def describe(self) -> str:
        parts = [f"{self.dtype}[{']['.join(map(str, self.shape))}]"]
        if self.pad:
            parts.append(f"pad {self.pad}")
        if self.transform is not None:
            parts.append(str(self.transform) if isinstance(self.transform, Swizzle)
                         else getattr(self.transform, "__name__", "custom transform"))
        return ", ".join(parts)
