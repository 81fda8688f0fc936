"""On-disk cache of compiled cubins, safe when several processes compile the same kernel.

An entry is keyed by a SHA-256 over everything that changes the machine code: the source, the
text of every smemkit header it includes, the compiler options, the target architecture, the
NVRTC, CUDA-header, cuda-core and smemkit versions. Entries are written to a temporary file and
renamed into place (atomic on POSIX), under an ``fcntl`` lock per key so two processes do not
both spend seconds compiling. The location is ``$SMEMKIT_CACHE_DIR`` or, by default,
``$XDG_CACHE_HOME/smemkit`` (``~/.cache/smemkit``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CACHE_ENV = "SMEMKIT_CACHE_DIR"


def cache_dir() -> Path:
    """The cache directory in force now (the environment is read on every call)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smemkit"


@dataclass(frozen=True)
class CacheEntry:
    """A cached compilation: the cubin and the metadata written beside it."""

    cubin: bytes
    meta: dict


def _paths(key: str) -> tuple[Path, Path, Path]:
    root = cache_dir() / "cubin" / key[:2]
    return root / f"{key}.cubin", root / f"{key}.json", root / f"{key}.lock"


def record_path(name: str) -> Path:
    """A JSON record file in the cache (e.g. ``autotune/<gpu>.json``), for small decisions."""
    return cache_dir() / f"{name}.json"


def update_record(name: str, key: str, value: dict) -> dict:
    """Set ``key`` in the JSON record ``name`` under an inter-process lock; returns the record."""
    path = record_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            record = read_record(name)
            record[key] = value
            _atomic_write(path, json.dumps(record, indent=1, sort_keys=True).encode())
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return record


def read_record(name: str) -> dict:
    """The JSON record ``name`` ({} when absent or unreadable)."""
    try:
        data = json.loads(record_path(name).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(key: str) -> CacheEntry | None:
    """The entry for ``key``, or None when absent or unreadable (a torn entry is a miss)."""
    cubin_path, meta_path, _ = _paths(key)
    try:
        meta = json.loads(meta_path.read_text())
        cubin = cubin_path.read_bytes()
    except (OSError, ValueError):
        return None
    if meta.get("cubin_bytes") != len(cubin):
        return None
    return CacheEntry(cubin, meta)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def store(key: str, entry: CacheEntry) -> None:
    """Write an entry; the cubin lands before its metadata, so a reader never sees half."""
    cubin_path, meta_path, _ = _paths(key)
    cubin_path.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(entry.meta, cubin_bytes=len(entry.cubin))
    _atomic_write(cubin_path, entry.cubin)
    _atomic_write(meta_path, json.dumps(meta, indent=1, sort_keys=True).encode())


@contextlib.contextmanager
def locked(key: str) -> Iterator[None]:
    """Hold an exclusive inter-process lock for ``key`` (released when the block ends)."""
    _, _, lock_path = _paths(key)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def info() -> dict:
    """Location, number of entries and bytes on disk."""
    root = cache_dir() / "cubin"
    entries = list(root.glob("*/*.cubin")) if root.is_dir() else []
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0
    return {"path": str(cache_dir()), "entries": len(entries), "bytes": size}


def clear() -> int:
    """Delete every entry (cubins and records); returns how many cubins were removed."""
    for record in cache_dir().glob("*/*.json"):  # records such as autotune/<gpu>.json
        if record.parent.name != "cubin":
            record.unlink()
    root = cache_dir() / "cubin"
    if not root.is_dir():
        return 0
    removed = 0
    for path in sorted(root.rglob("*"), reverse=True):
        if path.is_file():
            removed += path.suffix == ".cubin"
            path.unlink()
        else:
            path.rmdir()
    return removed
