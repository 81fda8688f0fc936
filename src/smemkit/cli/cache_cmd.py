"""``smemkit cache info|clear``: the on-disk kernel cache (runtime.cache)."""

from __future__ import annotations

import argparse
import json

from smemkit.runtime import cache


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the compiled-kernel cache")
    p.add_argument("action", choices=("info", "clear"),
                   help="info: where it is and what it holds; clear: remove what smemkit wrote there")
    p.add_argument("--json", action="store_true", help="print the same fields as one JSON object")
    p.set_defaults(run=run)


def human_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KiB``: binary units, one decimal above bytes."""
    value, unit = float(n), "B"
    for larger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


def _older_layout_note(summary: cache.CacheSummary) -> str:
    return (f"note     {summary.path} also holds cubin/ or autotune/ folders in the layout of an older "
            "smemkit; they carry no marker, so they are left alone: delete them by hand if they "
            "are smemkit's")


def run(args: argparse.Namespace) -> int:
    summary = cache.clear() if args.action == "clear" else cache.info()
    if args.json:
        print(json.dumps({"action": args.action, **summary.as_dict()}, indent=1))
        return 0
    if args.action == "clear":
        print(f"removed {summary.entries} cached kernels and {summary.records} records "
              f"({human_bytes(summary.bytes)}) from {summary.owned}")
    else:
        print(f"path     {summary.path}\nowned    {summary.owned}\nentries  {summary.entries}\n"
              f"records  {summary.records}\nsize     {human_bytes(summary.bytes)}")
    if summary.older_layout:
        print(_older_layout_note(summary))
    return 0
