"""``smemkit cache info|clear``: the on-disk cubin cache."""

from __future__ import annotations

import argparse

from smemkit.runtime import cache


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the compiled-kernel cache")
    p.add_argument("action", choices=("info", "clear"))
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "clear":
        print(f"removed {cache.clear()} cached cubins from {cache.cache_dir()}")
    else:
        c = cache.info()
        print(f"path    {c['path']}\nentries {c['entries']}\nbytes   {c['bytes']}")
    return 0
