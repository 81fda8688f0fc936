"""Reading the files a user hands smemkit: profiles, reports, configs, pattern and spec files.

Every failure becomes an :class:`~smemkit.errors.InvalidArgumentError` that names the file (and,
for Python files, the line), so the command line prints one ``smemkit: error:`` line instead of
a traceback.
"""

from __future__ import annotations

import runpy
import traceback
from pathlib import Path

from smemkit.errors import InvalidArgumentError


def existing_file(spec: object) -> Path | None:
    """``spec`` as a Path when it names an existing file, else None; a name the OS rejects
    (too long, a NUL byte) is simply not a file, so callers report it as one clear error."""
    try:
        path = Path(spec)  # type: ignore[arg-type]
        return path if path.is_file() else None
    except (OSError, ValueError, TypeError):
        return None


def read_text(path: str | Path, what: str) -> str:
    """The text of ``path``; an unreadable or non-UTF-8 file is an InvalidArgumentError naming
    ``what`` it was meant to be."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidArgumentError(f"cannot read {what} {path}: {exc}") from exc


def code_error(path: str | Path, exc: BaseException, what: str) -> InvalidArgumentError:
    """An error for ``exc`` raised while running the user's file ``path``: the file and the
    deepest line of it in the traceback, the exception's type and message."""
    where = str(path)
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        where = f"{exc.filename or path}:{exc.lineno}"
        detail = exc.msg
    else:
        target = str(Path(path).resolve())
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename and str(Path(f.filename).resolve()) == target]
        if lines:
            where = f"{path}:{lines[-1]}"
        detail = str(exc) or "(no message)"
    return InvalidArgumentError(f"{what} {where}: {type(exc).__name__}: {detail}")


def run_python_file(path: str | Path, what: str) -> dict[str, object]:
    """The global names a user's Python file defines, running it as a script; any exception
    it raises (a syntax error, a failed import, ``sys.exit``) is one InvalidArgumentError with
    the file and line."""
    try:
        return runpy.run_path(str(path))
    except (Exception, SystemExit) as exc:
        raise code_error(path, exc, what) from None
