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
