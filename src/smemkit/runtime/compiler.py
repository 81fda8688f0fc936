"""Run-time CUDA compilation with NVRTC (through cuda.core), cached on disk.

The architecture is always explicit (``sm_90a`` by default) so compile-only checks run on
machines without a GPU. The ptxas report (registers, stack, spills, shared memory) is kept with
each cubin: tests assert that no shipped kernel spills to local memory.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from smemkit import __version__
from smemkit.errors import CompileError, ToolNotFoundError
from smemkit.runtime import cache as disk_cache
from smemkit.runtime.paths import PACKAGE_INCLUDE, find_tool, include_dirs, toolkit_header_version

DEFAULT_ARCH = "sm_90a"
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"](smemkit/[^>"]+)[>"]', re.MULTILINE)


@dataclass(frozen=True)
class ResourceUsage:
    """What ptxas reported for one kernel."""

    registers: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    static_smem_bytes: int = 0

    @property
    def spills(self) -> bool:
        return bool(self.spill_store_bytes or self.spill_load_bytes)


@dataclass(frozen=True)
class CompiledModule:
    """A cubin, the log it was built with, and per-kernel resource usage."""

    label: str
    arch: str
    cubin: bytes
    log: str
    resources: dict[str, ResourceUsage] = field(default_factory=dict)
    from_cache: bool = False


def int_defines(text: str) -> dict[str, int]:
    """``#define NAME <int>`` lines of a kernel source, by name: what a Python mirror of the
    kernel's constants is checked against."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^#define\s+(\w+)\s+(\d+)\s*$", text, re.M)}


def package_source(relative: str) -> str:
    """The text of a kernel file shipped inside the package (``'hw/probe_kernels.cu'``)."""
    return resources.files("smemkit").joinpath(relative).read_text()


def parse_ptxas_log(log: str) -> dict[str, ResourceUsage]:
    """Per-kernel resources from ``ptxas -v`` output (as NVRTC relays it)."""
    usage: dict[str, ResourceUsage] = {}
    for block in re.split(r"(?=ptxas info\s*: Compiling entry function)", log):
        m = re.search(r"Compiling entry function '([^']+)'", block)
        if not m:
            continue

        def grab(pattern: str, text: str = block) -> int:
            hit = re.search(pattern, text)
            return int(hit.group(1)) if hit else 0

        usage[m.group(1)] = ResourceUsage(
            registers=grab(r"Used (\d+) registers"),
            stack_bytes=grab(r"(\d+) bytes stack frame"),
            spill_store_bytes=grab(r"(\d+) bytes spill stores"),
            spill_load_bytes=grab(r"(\d+) bytes spill loads"),
            static_smem_bytes=grab(r"(\d+) bytes smem"),
        )
    return usage


def _included_headers(source: str, seen: set[str] | None = None) -> dict[str, str]:
    """smemkit headers the source includes, transitively, as {name: text} for the cache key."""
    seen = set() if seen is None else seen
    found: dict[str, str] = {}
    for name in _INCLUDE_RE.findall(source):
        if name in seen:
            continue
        seen.add(name)
        path = PACKAGE_INCLUDE / name
        if path.is_file():
            text = path.read_text()
            found[name] = text
            found.update(_included_headers(text, seen))
    return found


# NVRTC 12.9 and newer keep their own cache of compiled programs (on disk, shared by processes); on
# a hit ptxas does not run and the log has no "ptxas info" lines, so the registers and spills smemkit
# reads from it go missing. On the H200's NVRTC, six reduction kernels compiled a second time on the
# same machine, each into an empty smemkit cache, came back with logs of 0-239 characters and no
# ptxas line, against 373-611 characters with their resources the first time (commit 75e5a3a).
# smemkit caches cubins with their logs itself (runtime.cache), so NVRTC's cache is switched off
# from that version on (`--no-cache`).
NVRTC_CACHE_SINCE = (12, 9)


@cache
def nvrtc_version() -> tuple[int, int] | None:
    """(major, minor) of the NVRTC library cuda.bindings loads; None when it cannot be loaded."""
    try:
        from cuda.bindings import nvrtc

        err, major, minor = nvrtc.nvrtcVersion()
    except Exception:  # no NVRTC library found: compiling will say so itself
        return None
    return (major, minor) if int(err) == 0 else None


def nvrtc_version_text() -> str | None:
    """``nvrtc_version`` as "major.minor" (None when NVRTC cannot be loaded)."""
    version = nvrtc_version()
    return f"{version[0]}.{version[1]}" if version else None


@cache
def _tool_versions() -> str:
    import cuda.core

    nvrtc = nvrtc_version_text() or "unknown"
    return f"nvrtc={nvrtc};cuda.core={cuda.core.__version__};headers={toolkit_header_version()}"


def _key_material(arch: str, defines: dict[str, object], extra: tuple[str, ...]) -> str:
    includes = [str(d) for d in include_dirs()]
    return repr((arch, sorted((k, str(v)) for k, v in defines.items()), extra, includes))


def cache_key(source: str, arch: str, defines: dict[str, object], extra: tuple[str, ...]) -> str:
    """The hash that names a cubin: source, its smemkit headers, options, arch and tool versions."""
    h = hashlib.sha256()
    for part in (
        source,
        repr(sorted(_included_headers(source).items())),
        _key_material(arch, defines, extra),
        _tool_versions(),
        __version__,
    ):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _nvrtc_compile(
    source: str, label: str, arch: str, defines: dict[str, object], extra: tuple[str, ...]
) -> tuple[bytes, str]:
    from cuda.core import Program, ProgramOptions

    program_options = ProgramOptions(
        name=label,
        arch=arch,
        std="c++17",
        include_path=[str(d) for d in include_dirs()],
        define_macro=[(k, str(v)) for k, v in sorted(defines.items())] or None,
        ptxas_options=["-v", *extra],
        no_cache=(nvrtc_version() or (0, 0)) >= NVRTC_CACHE_SINCE,
    )
    log = io.StringIO()
    try:
        obj = Program(source, "c++", program_options).compile("cubin", logs=log)
    except Exception as exc:  # cuda.core raises a plain error carrying NVRTC's log
        raise CompileError(
            f"NVRTC failed to compile kernel module '{label}' for {arch}:\n{exc}\n{log.getvalue()}"
        ) from exc
    return bytes(obj.code), log.getvalue()


def compile_module(
    source: str,
    label: str,
    *,
    arch: str = DEFAULT_ARCH,
    defines: dict[str, object] | None = None,
    ptxas_options: tuple[str, ...] = (),
) -> CompiledModule:
    """Compile ``source`` to a cubin for ``arch``, through the on-disk cache.

    ``label`` names the module in errors and in the cache metadata. Raises ``CompileError``
    with NVRTC's log when the source does not compile, and ``CacheError`` when the cache
    location cannot be used (runtime.cache says why smemkit does not compile on without it).
    """
    defines = dict(defines or {})
    key = cache_key(source, arch, defines, ptxas_options)
    hit = _cached(key, label, arch)
    if hit is not None:
        return hit
    with disk_cache.locked(key):
        hit = _cached(key, label, arch)  # another process may have finished meanwhile
        if hit is not None:
            return hit
        cubin, log = _nvrtc_compile(source, label, arch, defines, ptxas_options)
        resources = parse_ptxas_log(log)
        if not resources:
            raise CompileError(
                f"NVRTC compiled kernel module '{label}' for {arch} but its log has no ptxas "
                f"resource lines (registers, spills) to check; log:\n{log}"
            )
        disk_cache.store(key, disk_cache.CacheEntry(cubin, {"label": label, "arch": arch, "log": log}))
        return CompiledModule(label, arch, cubin, log, resources)


def _cached(key: str, label: str, arch: str) -> CompiledModule | None:
    """The cached module under ``key``, or None for a miss: no entry, one that fails its content
    check (runtime.cache.load), or one whose log lacks ptxas' resource lines. Entries stored
    while NVRTC's own cache was on can hold such logs (NVRTC_CACHE_SINCE); every miss is compiled
    again and its entry replaced."""
    entry = disk_cache.load(key)
    if entry is None:
        return None
    log = entry.meta.get("log")
    resources = parse_ptxas_log(log) if isinstance(log, str) else {}
    if not resources:
        return None
    return CompiledModule(label, arch, entry.cubin, log, resources, from_cache=True)


def arch_for_capability(major: int, minor: int) -> str:
    """NVRTC target for a compute capability: the ``a`` variant on sm_90 and newer."""
    return f"sm_{major}{minor}a" if major >= 9 else f"sm_{major}{minor}"


def dump_sass(cubin: bytes, *, function: str | None = None, timeout: float = 120) -> str:
    """``cuobjdump -sass`` of a cubin (written to a temporary file)."""
    exe = find_tool("cuobjdump")
    if exe is None:
        raise ToolNotFoundError(
            "cuobjdump was not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, or the "
            "nvidia-cuda-cuobjdump wheel); it is needed to read SASS. Install the CUDA toolkit or "
            "`pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`"
        )
    env = dict(os.environ)
    nvdisasm = find_tool("nvdisasm")
    if nvdisasm:
        env["PATH"] = str(Path(nvdisasm).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "module.cubin"
        path.write_bytes(cubin)
        cmd = [exe, "-sass", *(["-fun", function] if function else []), str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        hint = " (nvdisasm must be installed beside it)" if "nvdisasm" in proc.stderr else ""
        raise ToolNotFoundError(f"cuobjdump failed{hint}: {proc.stderr.strip()[:500]}")
    return proc.stdout
