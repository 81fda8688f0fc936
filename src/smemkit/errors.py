"""Errors smemkit raises, each naming what was wrong and what is allowed.

They subclass the built-in exception a Python user would expect (``ValueError`` for a bad
argument, ``RuntimeError`` for a device or compiler problem) so ``except ValueError`` works.
"""


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
