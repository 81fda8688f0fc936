"""Where the CUDA headers are, so NVRTC can compile kernels that include toolkit headers.

NVRTC does not ship ``cuda_fp16.h``, ``cooperative_groups.h`` or CCCL itself. The GPU extra
installs them as wheels (``nvidia-cuda-runtime``: ``cuda_runtime.h``, ``cooperative_groups.h``;
``nvidia-cuda-cccl``: ``cuda/std``, ``cub``, ``nv/target``), both into ``nvidia/cu13/include``
next to the NVRTC wheel, with CCCL under ``include/cccl``. The search order is fixed:

1. ``$CUDA_HOME``, then ``$CUDA_PATH``: a toolkit the user names explicitly;
2. the pip-installed wheels (``nvidia/cu13/include`` on ``sys.path``): the headers of the NVRTC
   release that compiles them, so they come before any toolkit that merely happens to be there;
3. the toolkit of ``nvcc`` on ``PATH``, then ``/usr/local/cuda``.

The first place that holds ``cuda_runtime.h`` ends the search (mixing releases invites
confusing errors); its ``cccl`` subdirectory is added when present. ``SMEMKIT_IGNORE_SYSTEM_CUDA=1``
skips 1 and 3, leaving the wheels alone: the tests use it to prove the wheels suffice on a
machine that also has a toolkit.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

PACKAGE_INCLUDE = Path(__file__).resolve().parent / "include"
IGNORE_SYSTEM_ENV = "SMEMKIT_IGNORE_SYSTEM_CUDA"
# Where the CUDA 13 wheels (nvidia-cuda-runtime, -cccl, -nvrtc) put headers, under nvidia/.
WHEEL_INCLUDE = "cu13/include"


def system_cuda_ignored() -> bool:
    """Whether ``SMEMKIT_IGNORE_SYSTEM_CUDA`` asks to search the pip wheels alone."""
    return os.environ.get(IGNORE_SYSTEM_ENV, "") not in ("", "0")


def _named_roots() -> list[Path]:
    """Toolkits named by ``$CUDA_HOME`` and ``$CUDA_PATH``, in that order."""
    if system_cuda_ignored():
        return []
    return [Path(os.environ[var]) for var in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(var)]


def _installed_roots() -> list[Path]:
    """The toolkit of ``nvcc`` on ``PATH``, then ``/usr/local/cuda``."""
    if system_cuda_ignored():
        return []
    roots: list[Path] = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(Path(nvcc).resolve().parent.parent)
    roots.append(Path("/usr/local/cuda"))
    return roots


def _toolkit_roots() -> list[Path]:
    """Every system toolkit root, named ones first (for tools in their ``bin/``)."""
    return _named_roots() + _installed_roots()


def _wheel_include_dirs() -> list[Path]:
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return []
    return [base / WHEEL_INCLUDE for base in map(Path, spec.submodule_search_locations)
            if (base / WHEEL_INCLUDE).is_dir()]


@functools.cache
def cuda_include_dirs() -> tuple[Path, ...]:
    """Include directories that hold ``cuda_runtime.h`` (and ``cccl`` beneath it), deduplicated,
    in the order of the module docstring.

    Empty when no toolkit headers are found: kernels that include only smemkit's own headers
    still compile, others fail with NVRTC's "cannot open source file" in the error.
    """
    dirs: list[Path] = []
    candidates = ([root / "include" for root in _named_roots()] + _wheel_include_dirs()
                  + [root / "include" for root in _installed_roots()])
    for inc in candidates:
        if not (inc / "cuda_runtime.h").is_file() and not (inc / "cuda").is_dir():
            continue
        for d in (inc, inc / "cccl"):
            d = d.resolve()
            if d.is_dir() and d not in dirs:
                dirs.append(d)
        if (inc / "cuda_runtime.h").is_file():
            break  # the first full set of headers wins; mixing releases invites confusing errors
    return tuple(dirs)


def include_dirs() -> tuple[Path, ...]:
    """smemkit's vendored headers first, then the toolkit's."""
    return (PACKAGE_INCLUDE, *cuda_include_dirs())


def toolkit_header_version() -> str:
    """``CUDA_VERSION`` from the headers in use (e.g. ``13000``), or ``none``; part of cache keys."""
    for inc in cuda_include_dirs():
        header = inc / "cuda.h"
        if header.is_file():
            m = re.search(r"#define\s+CUDA_VERSION\s+(\d+)", header.read_text(errors="replace"))
            if m:
                return m.group(1)
    return "none"


# Where Nsight Compute installs itself when it is not on PATH.
NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/nsight-compute*/ncu",
             "/usr/local/NVIDIA-Nsight-Compute*/ncu")


def find_tool(name: str) -> str | None:
    """An NVIDIA command-line tool (``ncu``, ``cuobjdump``, ``nvdisasm``): on PATH, in the
    toolkit's ``bin/``, in a pip-installed NVIDIA wheel's ``bin/``, or (ncu) where Nsight
    Compute installs itself. None when it is nowhere."""
    exe = shutil.which(name)
    if exe:
        return exe
    dirs = [root / "bin" for root in _toolkit_roots()]
    for base in map(Path, sys.path):
        dirs += [base / sub for sub in ("nvidia/cu13/bin", f"nvidia/cuda_{name}/bin")]
    for d in dirs:
        if (d / name).is_file() and os.access(d / name, os.X_OK):
            return str(d / name)
    if name == "ncu":
        hits = sorted(h for pattern in NCU_GLOBS for h in glob.glob(pattern))
        return hits[-1] if hits else None
    return None
