"""Errors smemkit raises, each naming what was wrong and what is allowed.

They subclass the built-in exception a Python user would expect (``ValueError`` for a bad
argument, ``RuntimeError`` for a device or compiler problem) so ``except ValueError`` works.
"""

import math


class SmemkitError(Exception):
    """Base class of every error smemkit raises on purpose."""


class InvalidArgumentError(SmemkitError, ValueError):
    """An argument has the wrong dtype, device, shape, layout or value."""


class UnsupportedDeviceError(SmemkitError, RuntimeError):
    """No GPU, or the GPU lacks a feature the request needs (clusters, shared memory size)."""


class CompileError(SmemkitError, RuntimeError):
    """NVRTC rejected a kernel; the message carries the kernel name and the compiler log."""


class ToolNotFoundError(SmemkitError, RuntimeError):
    """An NVIDIA command-line tool (cuobjdump, nvdisasm, ncu) is not installed."""


class CacheError(SmemkitError, RuntimeError):
    """The kernel cache's location cannot be used (not a directory, not writable, not smemkit's)."""


def is_int(value: object) -> bool:
    """Whether ``value`` is an integer argument: an ``int`` but not a ``bool`` (which Python
    counts as one, so ``True`` would pass for 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_positive_int(label: str, value: object) -> int:
    """``value`` when it is an integer >= 1, else an InvalidArgumentError naming ``label``."""
    if not is_int(value) or value < 1:
        raise InvalidArgumentError(f"{label} must be a positive integer, got {value!r}")
    return value


def is_number(value: object) -> bool:
    """Whether ``value`` is a real number argument (``int`` or ``float``, not ``bool``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_int_range(label: str, value: object, low: int, high: int | None = None) -> int:
    """``value`` when it is an integer in ``[low, high]`` (no upper end when ``high`` is None),
    else an InvalidArgumentError naming ``label`` and the range."""
    if not is_int(value) or value < low or (high is not None and value > high):
        allowed = f"an integer >= {low}" if high is None else f"an integer in [{low}, {high}]"
        raise InvalidArgumentError(f"{label} must be {allowed}, got {value!r}")
    return value


def check_positive_finite(label: str, value: object) -> float:
    """``value`` as a float when it is a finite number > 0, else an InvalidArgumentError."""
    if not is_number(value) or not math.isfinite(value) or value <= 0:
        raise InvalidArgumentError(f"{label} must be a finite number > 0, got {value!r}")
    return float(value)


def check_number_range(label: str, value: object, low: float, high: float) -> float:
    """``value`` as a float when it is a finite number in ``[low, high]``, else an
    InvalidArgumentError naming ``label`` and the range."""
    if not is_number(value) or not math.isfinite(value) or not low <= value <= high:
        raise InvalidArgumentError(f"{label} must be a number in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def check_fraction(label: str, value: object) -> float:
    """``value`` as a float when it is a finite number in [0, 1], else an InvalidArgumentError."""
    if not is_number(value) or not math.isfinite(value) or not 0 <= value <= 1:
        raise InvalidArgumentError(f"{label} must be a number in [0, 1], got {value!r}")
    return float(value)

