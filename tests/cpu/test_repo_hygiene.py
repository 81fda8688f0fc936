"""The tree's text stays true to the tree and free of work history.

1. Paths: every relative markdown link, and every ``benchmarks/``, ``docs/``, ``examples/``,
   ``scripts/``, ``src/smemkit/`` or ``tests/`` path named in the docs, the code or the tests,
   exists. A path written next to a placeholder (``<gpu>``, ``{name}``, ``*``, ``$OUT``) is a
   pattern, not a file, and is skipped.
2. No work history: comments, docstrings and docs explain the code in its own terms and cite a
   results file or a commit for a measured choice; they do not narrate how the work went (the
   ordinal of a working session, the day of a run, a run's number or short name, a run folder).
   Data files under benchmarks/results (JSON, logs, CSV, XML) are records, not prose, and are
   not searched.

Each check is parametrized by root so that a failure names the roots still to clean, and its
message lists file:line for every hit.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ROOTS = ("README.md", "docs", "src", "tests", "benchmarks", "scripts", "examples")
TEXT_SUFFIXES = {".py", ".md", ".cu", ".cuh", ".h", ".c", ".cpp", ".toml", ".sh", ".txt", ".cfg",
                 ".ini", ".yml", ".yaml", ".json", ""}
RECORD_SUFFIXES = {".json", ".log", ".csv", ".xml"}  # under benchmarks/results: measured data
C_LIKE = {".cu", ".cuh", ".h", ".c", ".cpp"}


def text_files(root: str) -> Iterator[Path]:
    top = ROOT / root
    paths = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
    for path in paths:
        rel = path.relative_to(ROOT)
        if any(part.startswith(".") or part == "__pycache__" or part.endswith(".egg-info")
               for part in rel.parts):
            continue
        if path.suffix not in TEXT_SUFFIXES:
            continue
        if rel.parts[:2] == ("benchmarks", "results") and path.suffix in RECORD_SUFFIXES:
            continue
        yield path


def read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


# ---------------------------------------------------------------------------------------------
# 1. Paths that must exist

PREFIXES = ("benchmarks", "docs", "examples", "scripts", "src/smemkit", "tests")
PATH = re.compile(r"(?<![\w.$/~-])(?:" + "|".join(re.escape(p) for p in PREFIXES) + r")/[\w./-]*")
PLACEHOLDER = set("<{*$[")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def named_paths(text: str) -> Iterator[tuple[int, str]]:
    for lineno, line in enumerate(text.splitlines(), 1):
        for match in PATH.finditer(line):
            after = line[match.end():match.end() + 1]
            if after and after in PLACEHOLDER:
                continue
            path = match.group(0).rstrip(".-")
            if "/." in path.removeprefix("./"):
                continue
            yield lineno, path


def markdown_links(text: str) -> Iterator[tuple[int, str]]:
    for lineno, line in enumerate(text.splitlines(), 1):
        for match in LINK.finditer(line):
            target = match.group(1).split("#", 1)[0]
            if not target or re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # an anchor in the same page, or a URL
            yield lineno, target


def missing_paths(root: str) -> list[str]:
    missing = []
    for path in text_files(root):
        text = read(path)
        if text is None:
            continue
        for lineno, name in named_paths(text):
            if not (ROOT / name).exists():
                missing.append(f"{rel(path)}:{lineno}: {name}")
        if path.suffix == ".md":
            for lineno, target in markdown_links(text):
                if not (path.parent / target).exists():
                    missing.append(f"{rel(path)}:{lineno}: link {target}")
    return missing


@pytest.mark.parametrize("root", ROOTS)
def test_every_named_path_exists(root: str):
    missing = missing_paths(root)
    assert not missing, f"{len(missing)} paths in {root} that do not exist:\n" + "\n".join(missing)


def test_the_path_check_sees_paths_links_and_placeholders():
    nope = "docs" + "/nope.md"  # split: this file's own text names no missing path
    text = (f"see benchmarks/results/h200/atomics.json, {nope} and [x](../a/b.md#top); "
            "not benchmarks/results/<gpu>/x.json, $OUT/docs/y.md or [u](https://example.org)")
    assert [p for _, p in named_paths(text)] == ["benchmarks/results/h200/atomics.json", nope]
    assert [t for _, t in markdown_links(text)] == ["../a/b.md"]


# ---------------------------------------------------------------------------------------------
# 2. No work history

ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
            "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth")
# the words are split so that this file's own source matches none of the patterns
SESSION = "(?:sess" + "ions?|sitt" + "ings?)"
RUN = "ru" + "ns?"
ID = r"[abcefstvwxy]\d{1,2}"  # the short names runs were given: a5, c10, v8, y4
# Searched in every line of every file, code included: none of these is ever code.
HISTORY = {
    "session ordinal": re.compile(r"\b(?:" + "|".join(ORDINALS.split()) + r"|\d+(?:st|nd|rd|th))[ -]"
                                  + SESSION + r"\b", re.I),
    "numbered session": re.compile(r"\b" + SESSION + r" #?\d+\b", re.I),
    "relative session": re.compile(r"\b(?:this|that|last|previous|next|earlier|later|same) " + SESSION
                                   + r"\b", re.I),
    "date of work": re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b"),
    "numbered run": re.compile(r"\b" + RUN + r" #?\d+\b", re.I),
    "named run": re.compile(r"\b" + RUN + r" " + ID + r"\b", re.I),
    "run folder": re.compile(r"\brun_20\d\d"),
    "made-after phrase": re.compile(r"\bmade after (?:seeing\b|" + RUN + r"\b|`|the \w+ " + SESSION + ")",
                                    re.I),
}
# Searched in prose only (comments, docstrings, Markdown outside code fences): short names that
# code uses for registers and loop variables too.
PROSE_HISTORY = {
    "run names in parentheses": re.compile(r"\((?:" + ID + r")(?:(?:, ?|/| and )" + ID + r")*\)"),
    "run names with a slash": re.compile(r"\b" + ID + r" ?/ ?" + ID + r"\b"),
    "run folder in backticks": re.compile(r"`" + ID + r"/"),
}
# prose hits that are not runs: (file, matched text) -> why
NOT_HISTORY = {
    ("src/smemkit/offload/split_gemv.cu", "a2/a3"): "mma fragment registers a0..a3",
}


def prose_lines(path: Path, text: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of the comments and docstrings of code, or of a Markdown file
    outside its code fences; everything for other text files."""
    if path.suffix == ".py":
        yield from _python_prose(text)
    elif path.suffix in C_LIKE:
        for match in re.finditer(r"//[^\n]*|/\*.*?\*/", text, re.S):
            first = text.count("\n", 0, match.start()) + 1
            for offset, line in enumerate(match.group(0).splitlines()):
                yield first + offset, line
    elif path.suffix == ".md":
        fenced = False
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield lineno, line
    else:
        yield from enumerate(text.splitlines(), 1)


def _python_prose(text: str) -> Iterator[tuple[int, str]]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
        tree = ast.parse(text)
    except (SyntaxError, tokenize.TokenError):
        yield from enumerate(text.splitlines(), 1)  # not Python after all: all of it is prose
        return
    for token in tokens:
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    lines = text.splitlines()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for lineno in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                yield lineno, lines[lineno - 1]


def history_hits(root: str) -> list[str]:
    hits = []
    for path in text_files(root):
        text = read(path)
        if text is None:
            continue
        name = rel(path)
        for lineno, line in enumerate(text.splitlines(), 1):
            for what, pattern in HISTORY.items():
                for match in pattern.finditer(line):
                    hits.append(f"{name}:{lineno}: {what}: {match.group(0)!r}")
        for lineno, line in sorted(set(prose_lines(path, text))):
            for what, pattern in PROSE_HISTORY.items():
                for match in pattern.finditer(line):
                    if (name, match.group(0)) not in NOT_HISTORY:
                        hits.append(f"{name}:{lineno}: {what}: {match.group(0)!r}")
    return hits


@pytest.mark.parametrize("root", ROOTS)
def test_no_work_history(root: str):
    hits = history_hits(root)
    assert not hits, (f"{len(hits)} hits of work history in {root} (explain the code instead; cite a "
                      "results file or `(commit abc1234)` for a measured finding):\n" + "\n".join(hits))


@pytest.mark.parametrize("line", [
    "chosen in the " + "tenth" + " " + "session", "measured " + "2026" + "-11-30", "see " + "run" + " 7",
    "(" + "c8" + ", c9)", "run" + "_2026" + "-11-30_x/", "the " + "runs" + " y4 and y6", "a5" + "/a6",
])
def test_the_history_patterns_catch_each_form(tmp_path, monkeypatch, line: str):
    (tmp_path / "notes.md").write_text(f"# notes\n\n{line}\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert history_hits("notes.md"), line


def test_code_is_not_taken_for_history(tmp_path, monkeypatch):
    code = '"""Doc."""\nx1, x2 = f(t0, (a0, a1))\nrows = (s0, s2)  # the two halves\n'
    (tmp_path / "k.py").write_text(code)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert history_hits("k.py") == []
