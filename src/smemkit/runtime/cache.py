"""On-disk cache of compiled cubins and small JSON records, safe across processes.

The location is ``$SMEMKIT_CACHE_DIR`` or, by default, ``$XDG_CACHE_HOME/smemkit``
(``~/.cache/smemkit``). That directory may hold anything of the user's: smemkit writes only inside
its own subfolder ``smemkit-kernels-v1/``, which it creates together with a marker file
(``SMEMKIT_CACHE_OWNER``). The subfolder is built under a temporary name with the marker inside and
renamed into place, so it never exists without its marker. ``clear`` deletes only files named in
the formats below, and only in a subfolder carrying the marker. Layout::

    smemkit-kernels-v1/SMEMKIT_CACHE_OWNER           the marker
    smemkit-kernels-v1/cubin/<k[:2]>/<k>.cubin       the cubin of key k
    smemkit-kernels-v1/cubin/<k[:2]>/<k>.json        its metadata (log, label, size, SHA-256)
    smemkit-kernels-v1/cubin/<k[:2]>/<k>.lock        the lock held while k is compiled
    smemkit-kernels-v1/records/<name>.json, .lock    small records (autotune decisions)

A key is the SHA-256 of everything that changes the machine code (``compiler.cache_key``). On
read the cubin's SHA-256 must equal the one in its metadata: a torn, truncated or altered cubin, or
metadata that does not parse as a JSON object, is a miss, never served; the compiler then builds
the kernel again under the key's ``fcntl`` lock and replaces the entry. Every file is written to a
temporary file in its folder and renamed into place (atomic on POSIX).

A location that cannot be used (a file, not writable, a folder of the subfolder's name that smemkit
did not create) raises ``CacheError`` naming ``SMEMKIT_CACHE_DIR`` and the path. smemkit does not
compile on without a cache there: every process would then spend NVRTC's seconds on every kernel
with nothing saying why, and the fix, pointing ``SMEMKIT_CACHE_DIR`` at a writable directory, is
one line.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from smemkit.errors import CacheError, InvalidArgumentError

CACHE_ENV = "SMEMKIT_CACHE_DIR"
OWNED_DIR = "smemkit-kernels-v1"
MARKER = "SMEMKIT_CACHE_OWNER"
_MARKER_FIRST_LINE = "smemkit kernel cache, layout 1"
_MARKER_TEXT = (
    f"{_MARKER_FIRST_LINE}\n"
    "smemkit created this folder; `smemkit cache clear` removes only the entries it wrote here.\n"
)
ENTRY_FORMAT = 1
# A temporary file older than this is left over from a killed writer; a live write takes
# milliseconds, so ``clear`` skips younger ones rather than pull a file from under a rename.
STALE_TEMP_S = 600.0

_KEY_RE = re.compile(r"[0-9a-f]{64}")
_SHARD_RE = re.compile(r"[0-9a-f]{2}")
_ENTRY_RE = re.compile(r"(?P<key>[0-9a-f]{64})\.(?P<kind>cubin|json|lock)")
_RECORD_NAME_RE = re.compile(r"[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*")
_RECORD_FILE_RE = re.compile(r"[A-Za-z0-9_-]+\.(?P<kind>json|lock)")
# _atomic_write's temporary names: "<final name>.<mkstemp's random letters>.tmp"
_TEMP_RE = re.compile(r"(?P<final>[A-Za-z0-9_.-]+)\.[a-z0-9_]+\.tmp")


def default_cache_dir() -> Path:
    """The location used when ``SMEMKIT_CACHE_DIR`` is unset."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smemkit"


def cache_dir() -> Path:
    """The cache location in force now (the environment is read on every call)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return default_cache_dir()


def owned_dir() -> Path:
    """The subfolder smemkit owns inside ``cache_dir()``; everything it writes lies there."""
    return cache_dir() / OWNED_DIR


def _problem(path: Path, what: str) -> CacheError:
    if os.environ.get(CACHE_ENV):
        source = f"{CACHE_ENV}={os.environ[CACHE_ENV]}"
    else:
        source = f"{CACHE_ENV} is unset, so the default {default_cache_dir()} is used"
    return CacheError(
        f"the kernel cache cannot use {path}: {what} ({source}); set {CACHE_ENV} to a writable "
        "directory"
    )


def _has_marker(folder: Path) -> bool:
    try:
        with open(folder / MARKER, encoding="utf-8", errors="replace") as f:
            return f.readline().rstrip("\n") == _MARKER_FIRST_LINE
    except OSError:
        return False


def _existing_owned() -> Path | None:
    """The owned subfolder, or None while it does not exist yet; CacheError when the location
    is a file or holds a folder of the subfolder's name without smemkit's marker."""
    base = cache_dir()
    if base.exists() and not base.is_dir():
        raise _problem(base, "it exists and is not a directory")
    owned = base / OWNED_DIR
    if not owned.exists():
        return None
    if not owned.is_dir():
        raise _problem(owned, "it exists and is not a directory")
    if not _has_marker(owned):
        raise _problem(owned, f"a folder of that name exists without smemkit's {MARKER} marker, "
                              "so it is not smemkit's and is left alone")
    return owned


def _create_owned(base: Path) -> None:
    """Make the owned subfolder with its marker in one rename; losing the race to another
    process is fine (a non-empty folder is never replaced by a rename)."""
    try:
        base.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=base, prefix=f".{OWNED_DIR}.", suffix=".tmp"))
    except OSError as exc:
        raise _problem(base, f"it cannot be created or written ({exc.strerror or exc})") from exc
    try:
        (staging / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
        with contextlib.suppress(OSError):
            os.rename(staging, base / OWNED_DIR)
    except OSError as exc:
        raise _problem(base, f"it cannot be written ({exc.strerror or exc})") from exc
    finally:
        with contextlib.suppress(OSError):
            (staging / MARKER).unlink()
        with contextlib.suppress(OSError):
            staging.rmdir()


def _owned_for_write() -> Path:
    owned = _existing_owned()
    if owned is None:
        _create_owned(cache_dir())
        owned = _existing_owned()
        if owned is None:
            raise _problem(cache_dir() / OWNED_DIR, "the folder vanished right after creation")
    if not os.access(owned, os.W_OK | os.X_OK):
        raise _problem(owned, "it is not writable")
    return owned


@dataclass(frozen=True)
class CacheEntry:
    """A cached compilation: the cubin and the metadata written beside it."""

    cubin: bytes
    meta: dict


def _entry_paths(owned: Path, key: str) -> tuple[Path, Path, Path]:
    if not isinstance(key, str) or not _KEY_RE.fullmatch(key):
        raise InvalidArgumentError(f"cache key must be 64 lowercase hex digits, got {key!r}")
    shard = owned / "cubin" / key[:2]
    return shard / f"{key}.cubin", shard / f"{key}.json", shard / f"{key}.lock"


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load(key: str) -> CacheEntry | None:
    """The entry for ``key``, or None when it is absent or not exactly what was stored (missing
    file, metadata that is not a JSON object, a cubin whose SHA-256 differs from the recorded)."""
    owned = _existing_owned()
    if owned is None:
        return None
    cubin_path, meta_path, _ = _entry_paths(owned, key)
    try:
        meta = json.loads(meta_path.read_bytes())
        cubin = cubin_path.read_bytes()
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != ENTRY_FORMAT:
        return None
    if meta.get("cubin_bytes") != len(cubin):
        return None
    if meta.get("cubin_sha256") != hashlib.sha256(cubin).hexdigest():
        return None
    return CacheEntry(cubin, meta)


def store(key: str, entry: CacheEntry) -> None:
    """Write (or replace) the entry for ``key``: the cubin first, then its metadata with the
    cubin's size and SHA-256, each by an atomic rename."""
    owned = _owned_for_write()
    cubin_path, meta_path, _ = _entry_paths(owned, key)
    meta = dict(entry.meta, format=ENTRY_FORMAT, cubin_bytes=len(entry.cubin),
                cubin_sha256=hashlib.sha256(entry.cubin).hexdigest())
    try:
        cubin_path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(cubin_path, entry.cubin)
        _atomic_write(meta_path, json.dumps(meta, indent=1, sort_keys=True).encode())
    except OSError as exc:
        raise _problem(cubin_path.parent, f"an entry could not be written ({exc})") from exc


@contextlib.contextmanager
def locked(key: str) -> Iterator[None]:
    """Hold an exclusive inter-process lock for ``key`` (released when the block ends)."""
    _, _, lock_path = _entry_paths(_owned_for_write(), key)
    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        f = open(lock_path, "a+b")  # noqa: SIM115 - closed below, after the lock is released
    except OSError as exc:
        raise _problem(lock_path.parent, f"a lock file could not be opened ({exc})") from exc
    with f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _record_file(owned: Path, name: str) -> Path:
    if not isinstance(name, str) or not _RECORD_NAME_RE.fullmatch(name):
        raise InvalidArgumentError(
            f"record name must be '/'-separated parts of letters, digits, '_' or '-', got {name!r}")
    return owned / "records" / f"{name}.json"


def record_path(name: str) -> Path:
    """Where the JSON record ``name`` (e.g. ``autotune/<gpu>``) lives."""
    return _record_file(owned_dir(), name)


def read_record(name: str) -> dict:
    """The JSON record ``name`` ({} when absent, unreadable or not a JSON object)."""
    owned = _existing_owned()
    if owned is None:
        return {}
    try:
        data = json.loads(_record_file(owned, name).read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def update_record(name: str, key: str, value: dict) -> dict:
    """Set ``key`` in the JSON record ``name`` under an inter-process lock; returns the record."""
    path = _record_file(_owned_for_write(), name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path.with_suffix(".lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                record = read_record(name)
                record[key] = value
                _atomic_write(path, json.dumps(record, indent=1, sort_keys=True).encode())
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
    except OSError as exc:
        raise _problem(path.parent, f"a record could not be written ({exc})") from exc
    return record


def _plain_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _entry_kind(name: str, shard: str) -> str | None:
    temp = _TEMP_RE.fullmatch(name)
    if temp and _entry_kind(temp["final"], shard) in ("cubin", "json"):
        return "temp"
    m = _ENTRY_RE.fullmatch(name)
    return m["kind"] if m and m["key"][:2] == shard else None


def _record_kind(name: str) -> str | None:
    temp = _TEMP_RE.fullmatch(name)
    if temp and _record_kind(temp["final"]) == "record":
        return "temp"
    m = _RECORD_FILE_RE.fullmatch(name)
    return None if m is None else "record" if m["kind"] == "json" else "lock"


def _written_files(owned: Path) -> Iterator[tuple[Path, str]]:
    """Each file under ``owned`` named in a format smemkit writes, with its kind: "cubin",
    "json" (an entry's metadata), "lock", "record" or "temp". Links are never followed."""
    shards = owned / "cubin"
    if shards.is_dir() and not shards.is_symlink():
        for shard in sorted(shards.iterdir()):
            if not (_SHARD_RE.fullmatch(shard.name) and shard.is_dir() and not shard.is_symlink()):
                continue
            for path in sorted(shard.iterdir()):
                kind = _entry_kind(path.name, shard.name)
                if kind and _plain_file(path):
                    yield path, kind
    records = owned / "records"
    if records.is_dir() and not records.is_symlink():
        for folder, dirs, files in os.walk(records):
            dirs[:] = sorted(d for d in dirs if _RECORD_NAME_RE.fullmatch(d))
            for name in sorted(files):
                kind = _record_kind(name)
                path = Path(folder) / name
                if kind and _plain_file(path):
                    yield path, kind


@dataclass(frozen=True)
class CacheSummary:
    """What the cache holds (``info``) or what ``clear`` removed."""

    path: Path  # the cache location (SMEMKIT_CACHE_DIR or the default)
    owned: Path  # the subfolder smemkit owns in it
    entries: int  # compiled kernels (cubins)
    records: int  # JSON records (autotune)
    bytes: int  # on disk, every file smemkit wrote counted
    older_layout: bool = False  # smemkit's folders from before the owned subfolder, left alone

    def as_dict(self) -> dict:
        return {"path": str(self.path), "owned": str(self.owned), "entries": self.entries,
                "records": self.records, "bytes": self.bytes, "older_layout": self.older_layout}


def _older_layout(base: Path) -> bool:
    """Whether ``base`` holds the folders an older smemkit wrote straight into the cache
    location (``cubin/``, ``autotune/``); it cannot tell them from a user's, so it never
    removes them."""
    return (base / "cubin").is_dir() or (base / "autotune").is_dir()


def info() -> CacheSummary:
    """Location, entries, records and bytes on disk (CacheError when the location is unusable)."""
    owned = _existing_owned()
    base = cache_dir()
    counts = {"cubin": 0, "record": 0}
    size = 0
    for path, kind in _written_files(owned) if owned else ():
        with contextlib.suppress(OSError):  # a file may go while it is counted
            size += path.stat().st_size
            counts[kind] = counts.get(kind, 0) + 1
    return CacheSummary(base, base / OWNED_DIR, counts["cubin"], counts["record"], size,
                        _older_layout(base))


def clear() -> CacheSummary:
    """Delete every entry and record smemkit wrote, and nothing else; returns what went.

    Only files named in the cache's formats, inside the owned subfolder carrying the marker, are
    removed; the marker and the subfolder stay. Temporary files younger than ``STALE_TEMP_S`` are
    left to the writers that are about to rename them."""
    owned = _existing_owned()
    base = cache_dir()
    entries = records = size = 0
    now = time.time()
    for path, kind in list(_written_files(owned)) if owned else ():
        try:
            stat = path.stat()
            if kind == "temp" and now - stat.st_mtime < STALE_TEMP_S:
                continue
            path.unlink()
        except FileNotFoundError:  # another process removed or replaced it meanwhile
            continue
        except OSError as exc:
            raise _problem(path, f"it could not be removed ({exc.strerror or exc})") from exc
        size += stat.st_size
        entries += kind == "cubin"
        records += kind == "record"
    if owned:
        _remove_empty_folders(owned)
    return CacheSummary(base, base / OWNED_DIR, entries, records, size, _older_layout(base))


def _remove_empty_folders(owned: Path) -> None:
    """Remove the shard and record folders that ``clear`` emptied; a folder of any other name,
    or one still holding something, stays."""
    shards = owned / "cubin"
    if shards.is_dir() and not shards.is_symlink():
        for shard in shards.iterdir():
            if _SHARD_RE.fullmatch(shard.name) and not shard.is_symlink():
                with contextlib.suppress(OSError):
                    shard.rmdir()
    records = owned / "records"
    if records.is_dir() and not records.is_symlink():
        folders = []
        for folder, dirs, _ in os.walk(records):
            dirs[:] = [d for d in dirs if _RECORD_NAME_RE.fullmatch(d)]
            folders += [Path(folder) / d for d in dirs]
        for folder in sorted(folders, key=lambda p: -len(p.parts)):  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()
