"""The ``smemkit`` command: ``info``, ``probe``, ``cache``, ``bench``, and the parts' subcommands."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata

from smemkit.atomics import cli as atomics_cli
from smemkit.cli import advise_cmd, bench_cmd, cache_cmd, info_cmd, probe_cmd
from smemkit.errors import CompileError, SmemkitError
from smemkit.offload import cli as offload_cli
from smemkit.tiling import cli as tiling_cli

# Each module adds its subcommand(s) with register(subparsers); parts append theirs here.
COMMANDS = (advise_cmd, info_cmd, probe_cmd, cache_cmd, bench_cmd, offload_cli, tiling_cli, atomics_cli)
# Top-level packages of the "gpu" extra (torch; cuda-core and cuda-bindings): a command that
# reaches for one that is missing says which extra to install instead of a traceback.
GPU_EXTRA_PACKAGES = frozenset({"torch", "cuda"})
GPU_EXTRA_HINT = "needs the GPU extra: pip install 'smemkit[gpu]'"


def version() -> str:
    """The installed package's version, else (a source tree on the path) smemkit.__version__."""
    try:
        return metadata.version("smemkit")
    except metadata.PackageNotFoundError:
        import smemkit

        return smemkit.__version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="smemkit",
        description="Memory-bound GPU kernels beyond one block's registers, with cost models "
        "that say when they pay.",
    )
    parser.add_argument("--version", action="version", version=f"smemkit {version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        module.register(sub)
    return parser


def error_line(exc: SmemkitError) -> str:
    """The error's message on one line: characters a user's input carried that would break it
    (a newline or carriage return in a file name) are escaped. A compiler log keeps its lines."""
    text = str(exc)
    if isinstance(exc, CompileError):
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except SmemkitError as exc:
        print(f"smemkit: error: {error_line(exc)}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in GPU_EXTRA_PACKAGES:
            raise
        print(f"smemkit: error: 'smemkit {args.command}' {GPU_EXTRA_HINT} ({exc.name} is not installed)",
              file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`smemkit ... | head`): stop quietly, as other command-line tools do;
        # stdout is pointed at /dev/null so the interpreter's final flush cannot raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
