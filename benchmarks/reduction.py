"""Time every reduction-reuse variant and baseline on the current GPU (SPEC §1, issue 3).

    python benchmarks/reduction.py --out benchmarks/results/h200/reduction.json

Every call is timed twice with the L2 flushed before each repetition (GPU time from HBM): as
CUDA-graph replays (``ms_graph``) and launched from Python each time (``ms_with_launch``, host
overhead included); ``ms`` is the faster median and ``timing`` says which
(``smemkit.runtime.timing.time_both_modes``: in this process graph replays of some kernels
measured 3-10 % slower than their launches on the H200, commit f567725).
Per (workload, M, N): torch eager, torch.compile (default and max-autotune-no-cudagraphs),
the hand-written autotuned Triton kernel, and every legal smemkit variant (staged, reread,
cluster P = 2/4/8/16, the prefetch variants, and reread_l2 / reread_l2_t512 — persistent
re-read capped by the L2; with ``_rows`` one CTA per row — and regs / regs_t512 / regs_t256 —
the row held in registers, N <= 16K at 1024 threads, 8K at 512, 4K at 256;
``SMEMKIT_REREAD_L2_FRACTION`` sets reread_l2's share of the L2). CUDA events after warm-up,
median of --reps (>= 20); compilation and autotuning happen in the warm-up, outside the timing.
Each record carries the relative error against the float64 reference of the spec (rows of the
same inputs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from smemkit.errors import InvalidArgumentError, UnsupportedDeviceError
from smemkit.hw.environment import device_block, provenance
from smemkit.reduction import BUILTIN, reference, run
from smemkit.reduction.eager import EAGER
from smemkit.reduction.reference import output_errors
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.timing import time_both_modes

WIDTHS = (4096, 8192, 16384, 32768, 65536)
ROWS = {"layernorm_bwd": 2048}
DEFAULT_ROWS = 4096
OURS = [("staged", None), ("reread", None), ("reread_t512", None), ("cluster", 2), ("cluster", 4),
        ("cluster", 8),
        ("cluster", 16), ("staged_pf", None), ("cluster_pf", 2), ("cluster_pf", 4), ("cluster_pf", 8),
        ("cluster_pf", 16),
        ("reread_l2", None), ("reread_l2_t512", None), ("reread_l2_rows", None),
        ("reread_l2_t512_rows", None), ("regs", None), ("regs_t512", None),
        ("regs_t256", None)]


def baselines(methods: set[str]) -> dict[str, dict]:
    """Callables per baseline method and workload: f(tensors, scalars) -> outputs."""
    found: dict[str, dict] = {}
    if "eager" in methods:
        found["eager"] = EAGER
    # Each workload is compiled for 5 widths by 2 modes: above Dynamo's default cache limit (8),
    # past which it silently falls back to eager.
    torch._dynamo.config.cache_size_limit = 64
    torch._dynamo.config.accumulated_cache_size_limit = 1024
    if "compile" in methods:
        found["compile"] = {n: torch.compile(f, dynamic=False) for n, f in EAGER.items()}
    if "compile_max" in methods:
        found["compile_max"] = {n: torch.compile(f, dynamic=False, mode="max-autotune-no-cudagraphs")
                                for n, f in EAGER.items()}
    if "triton" in methods:
        from smemkit.reduction.triton_kernels import TRITON

        found["triton"] = TRITON
    return found


def bench_shape(name: str, M: int, N: int, methods: set[str], table: dict, reps: int) -> list[dict]:
    spec = BUILTIN[name]
    tensors, scalars = example_inputs(name, M, N, device="cuda")
    want = reference(spec, tensors, scalars)
    compulsory = spec.bytes.compulsory * M * N
    records = []

    def record(method: str, P: int, fn) -> None:
        t0 = time.perf_counter()
        try:
            got = fn()
            torch.cuda.synchronize()
        except (UnsupportedDeviceError, InvalidArgumentError) as exc:  # regs: a row too wide
            records.append({"workload": name, "M": M, "N": N, "variant": method, "P": P,
                            "ms": None, "eff_tbps": None, "rel_err": None, "illegal": str(exc)})
            return
        first_s = time.perf_counter() - t0
        errors = output_errors(got, want)
        del got
        both = time_both_modes(fn, warmup=5, reps=reps)
        timing = both.best
        records.append({
            "workload": name, "M": M, "N": N, "variant": method, "P": P,
            "ms": timing.median_ms, "p20_ms": timing.p20_ms, "p80_ms": timing.p80_ms,
            "eff_tbps": compulsory / (timing.median_ms * 1e-3) / 1e12, **errors,
            "ms_graph": both.graph.median_ms if both.graph else None, "ms_with_launch": both.launch.median_ms,
            "first_call_s": first_s, "timing": both.mode,
        })

    for method, fns in table.items():
        record(method, 1, lambda f=fns[name]: f(tensors, scalars))
    for variant, P in OURS:
        if variant in methods:
            record(variant, P or 1,
                   lambda v=variant, p=P: run(spec, tensors, scalars, variant=v, cluster_size=p))
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workloads", nargs="+", default=sorted(BUILTIN))
    parser.add_argument("--widths", nargs="+", type=int, default=list(WIDTHS))
    parser.add_argument("--methods", nargs="+",
                        default=["eager", "compile", "compile_max", "triton",
                                 *dict.fromkeys(method for method, _ in OURS)])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--append", action="store_true",
                        help="add to the records already in --out (e.g. a second run for compile_max)")
    args = parser.parse_args()
    if args.reps < 20:
        parser.error("--reps must be at least 20")
    methods = set(args.methods)
    table = baselines(methods)
    records: list[dict] = []
    device = device_block()
    result = {"provenance": provenance(device), "device": device, "commands": [" ".join(sys.argv)],
              "records": records}
    if args.append and args.out.exists():  # records measured again replace the earlier ones
        previous = json.loads(args.out.read_text())
        again = {(n, N, m) for n in args.workloads for N in args.widths for m in methods}
        records += [r for r in previous["records"]
                    if (r["workload"], r["N"], r["variant"]) not in again]
        result["commands"] = previous.get("commands", []) + result["commands"]
    for name in args.workloads:
        for N in args.widths:
            M = ROWS.get(name, DEFAULT_ROWS)
            records += bench_shape(name, M, N, methods, table, args.reps)
            torch.cuda.empty_cache()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n")  # partial results survive
            best = max((r for r in records if r["N"] == N and r["workload"] == name and r["ms"]),
                       key=lambda r: r["eff_tbps"], default=None)
            if best is None:
                continue
            print(f"{name:14s} N={N:6d} best {best['variant']}{best['P']:>3d} "
                  f"{best['eff_tbps']:.2f} TB/s", flush=True)
    print_table(records)
    return 0


def print_table(records: list[dict]) -> None:
    """TB/s per method (columns) per (workload, N) (rows); '-' where illegal."""
    cols: list[str] = []
    for r in records:
        key = r["variant"] + (f"{r['P']}" if r["variant"].startswith("cluster") else "")
        if key not in cols:
            cols.append(key)
    print("workload        N      " + " ".join(f"{c:>10s}" for c in cols))
    rows: dict[tuple, dict] = {}
    for r in records:
        key = r["variant"] + (f"{r['P']}" if r["variant"].startswith("cluster") else "")
        rows.setdefault((r["workload"], r["N"]), {})[key] = r
    for (name, N), by in rows.items():
        cells = []
        for c in cols:
            r = by.get(c)
            ok = r and r["ms"] and r["rel_err"] < 1e-4 and (r["max_code_diff"] or 0) <= 1
            cells.append(f"{r['eff_tbps']:10.2f}" if ok else f"{'-' if not r or not r['ms'] else 'ERR':>10s}")
        print(f"{name:14s} {N:6d} " + " ".join(cells))


if __name__ == "__main__":
    raise SystemExit(main())
