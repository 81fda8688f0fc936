"""Split host/HBM linear (DAK decode GEMV) on the current GPU against cuBLAS, UVA zero-copy and
copy-then-cuBLAS, plus the host-read congestion probe (SPEC §2, issue 5). One command:

    python benchmarks/offload_ops.py                # H200 -> benchmarks/results/h200/offload_ops.json
    python benchmarks/offload_ops.py --quick        # one shape, batch 1 and 8, three ratios
    python benchmarks/offload_ops.py --compile-only # no GPU: compile every shipped kernel for sm_90a

Steps (records are written to --out after each one, so a timeout keeps what was measured):
1. link rates in this run: B_h = pinned host -> device copy (copy engine, exact-size pinned buffer
   from smemkit.offload.PinnedBuffer, ``Tensor.copy_(non_blocking=True)``), B_g = device-to-device
   copy, (read + write bytes) / time, the convention of the device profile; r* = B_h / (B_h + B_g);
2. the congestion probe (host CTAs x window against a concurrent HBM stream) and its choice, which
   the smemkit method then uses (unless --host-ctas / --host-window are given); the choice is stored
   as "congestion.profile_field", the device profile's optional ``host_congestion`` entry
   (--profile-out writes a profile JSON carrying it);
3. per weight shape (N_out x K, bf16) x batch x offload ratio r, four methods, each checked against
   a float64 reference (relative norm error, output poisoned with NaN first) and timed with
   smemkit.runtime.timing.time_gpu (CUDA events, warm-up, median; one call captured in a CUDA graph
   and replayed, so Python launch overhead stays out; L2 flushed before each repetition):
     smemkit           split_linear: host rows read in place by the congestion-controlled CTAs,
                       HBM rows by the rest, one kernel
     cublas_hbm        torch.nn.functional.linear on the whole weight in HBM (the upper bound)
     uva               UVA zero-copy as vLLM's CPU offload does it: cuBLAS (F.linear) on the HBM rows
                       and cuBLAS on a CUDA tensor aliasing the pinned host rows (read in place
                       over PCIe), outputs concatenated; where torch refuses the aliasing tensor,
                       split_linear with every CTA but one reading host rows ("impl" says which)
     copy_then_cublas  copy the host rows into their place in an HBM copy of the weight
                       (cudaMemcpyAsync), then one cuBLAS call
   Each record: op, shape, batch, r (asked), r_actual (host rows / N), method, ms (median), ideal_ms =
   max(r W / B_h, (1 - r) W / B_g, C / F) with B_h, B_g from step 1 and F the profile's bf16 rate,
   ms_over_ideal, eff_gbps = (weight + x + y bytes) / time, rel_err.
A table is printed last.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "h200" / "offload_ops.json"
SHAPES = ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192))
BATCHES = (1, 8, 64)
RATIOS = ("0", "r*", "0.05", "0.1", "0.25", "0.5", "1.0")
METHODS = ("smemkit", "cublas_hbm", "uva", "copy_then_cublas")


def log(msg: str) -> None:
    print(f"[offload_ops {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    p.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES),
                   help="weight shapes N_outxK, comma-separated")
    p.add_argument("--batches", default=",".join(map(str, BATCHES)), help="batch sizes (1..64)")
    p.add_argument("--ratios", default=",".join(RATIOS), help="offload ratios; 'r*' = B_h/(B_h+B_g)")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions per point (median)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--host-ctas", type=int, default=None, help="override the congestion choice")
    p.add_argument("--host-window", type=int, default=None, help="bytes in flight per host CTA (8192..32768)")
    p.add_argument("--skip-congestion", action="store_true", help="do not run the congestion probe")
    p.add_argument("--congestion-reps", type=int, default=3)
    p.add_argument("--budget-s", type=float, default=330.0,
                   help="stop starting new points after this many seconds (default 330)")
    p.add_argument("--quick", action="store_true", help="4096x14336, batch 1 and 8, r in {0, r*, 0.25}")
    p.add_argument("--profile-out", type=Path, default=None,
                   help="also write the device profile with the measured host_congestion field here")
    p.add_argument("--compile-only", action="store_true",
                   help="compile every shipped offload kernel for sm_90a, report registers/spills (no GPU)")
    args = p.parse_args(argv)
    if args.quick:
        args.shapes, args.batches, args.ratios = "4096x14336", "1,8", "0,r*,0.25"
    return args


def compile_only() -> int:
    from smemkit.offload import gemv
    from smemkit.runtime.compiler import compile_module, package_source

    ok = True
    for dtype, host_load, host_stage in gemv.shipped_variants():
        m = gemv.compile_variant(dtype, "sm_90a", host_load, host_stage)
        for name, u in sorted(m.resources.items()):
            log(f"{m.label}:{name}: {u.registers} registers, {u.static_smem_bytes} B smem, "
                f"spills {u.spill_store_bytes}/{u.spill_load_bytes}, stack {u.stack_bytes}")
            ok &= not u.spills and u.stack_bytes == 0
    m = compile_module(package_source("offload/congestion.cu"), "offload/congestion", arch="sm_90a")
    for name, u in m.resources.items():
        log(f"{m.label}:{name}: {u.registers} registers, spills {u.spill_store_bytes}/{u.spill_load_bytes}")
        ok &= not u.spills
    return 0 if ok else 1


class Results:
    """The JSON document, rewritten (atomically) after every record."""

    def __init__(self, path: Path, doc: dict) -> None:
        self.path = path
        self.doc = doc
        path.parent.mkdir(parents=True, exist_ok=True)
        self.flush()

    def flush(self) -> None:
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(_clean(self.doc), indent=1, default=str, allow_nan=False) + "\n")
        os.replace(tmp, self.path)

    def add(self, record: dict) -> None:
        self.doc["records"].append(record)
        self.flush()


def _clean(obj):
    """Non-finite floats become null (strict JSON); containers recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


SLOW_CALL_MS = 25.0  # calls slower than this get fewer repetitions (reps // 4, at least 5)


def timed(fn, reps: int, warmup: int) -> tuple[dict, str]:
    """time_gpu with one call captured in a CUDA graph; eager timing if capture fails."""
    import torch

    from smemkit.runtime.timing import time_gpu

    probe = time_gpu(fn, warmup=1, reps=1)
    if probe.median_ms > SLOW_CALL_MS:
        reps, warmup = max(5, reps // 4), 1
    try:
        t = time_gpu(fn, warmup=warmup, reps=reps, graph=True, flush_l2=True)
        mode = "cuda_graph"
    except Exception as exc:  # a baseline torch refuses to capture: time it eagerly
        torch.cuda.synchronize()
        log(f"  graph capture failed ({type(exc).__name__}: {str(exc)[:120]}); timing eagerly")
        t = time_gpu(fn, warmup=warmup, reps=reps, graph=False, flush_l2=True)
        mode = "eager"
    return {"ms": t.median_ms, "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "samples": t.samples}, mode


def measure_links(reps: int) -> dict:
    """B_h (pinned H2D copy, 1 GiB) and B_g (D2D copy, 2 GiB, read + write) in bytes/s."""
    import torch

    from smemkit.offload.pinned import PinnedBuffer
    from smemkit.runtime.timing import time_gpu

    n = 1 << 30
    with PinnedBuffer(n) as buf:
        host = buf.tensor(torch.uint8)
        host.fill_(3)
        dev = torch.empty(n, dtype=torch.uint8, device="cuda")
        t_h = time_gpu(lambda dev=dev, host=host: dev.copy_(host, non_blocking=True), warmup=2,
                       reps=max(5, reps // 2))
        del dev
    m = 2 << 30
    src = torch.ones(m, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t_g = time_gpu(lambda dst=dst, src=src: dst.copy_(src), warmup=3, reps=reps)
    del src, dst
    torch.cuda.empty_cache()
    b_h = n / (t_h.median_ms * 1e-3)
    b_g = 2 * m / (t_g.median_ms * 1e-3)
    return {"B_h_bytes_per_s": b_h, "B_g_bytes_per_s": b_g, "B_h_gbps": b_h / 1e9, "B_g_tbps": b_g / 1e12,
            "r_star": b_h / (b_h + b_g), "h2d_bytes": n, "d2d_bytes_read": m,
            "method": "B_h: 1 GiB exact-size pinned -> device Tensor.copy_(non_blocking); B_g: 2 GiB "
                      "device -> device copy_, (read + write) / time; CUDA events, median"}


def _rel_err(fn, ref, ref_norm: float, batch: int, n_out: int) -> float:
    """||fn(out) - ref|| / ||ref|| with ``out`` poisoned (NaN) first, in float64."""
    import torch

    out = torch.full((batch, n_out), float("nan"), dtype=torch.bfloat16, device="cuda")
    got = fn(out)
    torch.cuda.synchronize()
    return float((got.double() - ref).norm()) / ref_norm


def _compare_host_paths(doc, results, x, sw, host_ctas, host_window, args, wbytes, batch) -> None:
    """All rows on the host: split_linear with staged row segments (default) vs direct fragment
    loads (host_stage=0), as GB/s of weight; stored under "host_path_comparison"."""
    import torch

    from smemkit.offload.gemv import split_linear

    entry = {"shape": list(sw.shape), "batch": batch, "host_ctas": host_ctas,
             "host_window_bytes": host_window}
    for stage in (1, 0):
        def call(stage=stage):
            return split_linear(x, sw, host_ctas=host_ctas, host_window=host_window, host_stage=stage)

        try:
            tm, mode = timed(call, args.reps, args.warmup)
            gbps = wbytes / (tm["ms"] * 1e-3) / 1e9
            entry[f"host_stage{stage}"] = {**tm, "timing": mode, "weight_gbps": gbps}
        except Exception as exc:
            torch.cuda.synchronize()
            entry[f"host_stage{stage}"] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    doc.setdefault("host_path_comparison", []).append(entry)
    results.flush()


def parse_ratio(text: str, r_star: float) -> tuple[str, float]:
    text = text.strip()
    return (text, r_star) if text in ("r*", "rstar") else (text, float(text))


def run(args: argparse.Namespace) -> int:
    import torch
    import torch.nn.functional as F

    from smemkit.hw.environment import device_block
    from smemkit.hw.profile import select_profile
    from smemkit.offload.congestion import run_congestion_probe
    from smemkit.offload.costmodel import hardware_from_profile
    from smemkit.offload.gemv import (
        HOST_WINDOW_UNIT,
        launch_plan_for,
        split_linear,
        window_to_host_steps,
    )
    from smemkit.offload.pinned import SplitWeight
    from smemkit.runtime.device import gpu_info, require_gpu

    t_start = time.time()
    dev_index = require_gpu()
    torch.manual_seed(0)
    profile, why = select_profile()
    hw = hardware_from_profile(profile)
    shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes.split(",") if s]
    batches = [int(b) for b in args.batches.split(",") if b]
    doc = {
        "benchmark": "offload_ops", "status": "running", "command": " ".join(sys.argv),
        "device": device_block(), "profile": profile.name, "profile_reason": why,
        "F_tflops": hw.flops_per_s / 1e12, "F_source": hw.sources.get("F"),
        "methods": {
            "smemkit": "smemkit.offload.split_linear (split_gemv.cu): one kernel, host CTAs read the "
                       "pinned rows in place, the others the HBM rows",
            "cublas_hbm": "torch.nn.functional.linear, whole weight in HBM",
            "uva": "F.linear on the HBM rows + F.linear on a CUDA tensor aliasing the pinned rows "
                   "(__cuda_array_interface__), torch.cat; see each record's impl",
            "copy_then_cublas": "Tensor.copy_(non_blocking) of the pinned rows into an HBM copy of the "
                                "weight, then F.linear",
        },
        "timing": "smemkit.runtime.timing.time_gpu(graph=True, flush_l2=True): CUDA events around replays "
                  "of one captured call, median; eager where capture fails (record 'timing')",
        "records": [],
    }
    results = Results(args.out, doc)

    log("link rates: pinned H2D copy and D2D copy")
    links = measure_links(args.reps)
    doc["links"] = links
    results.flush()
    b_h, b_g, r_star = links["B_h_bytes_per_s"], links["B_g_bytes_per_s"], links["r_star"]
    log(f"B_h {links['B_h_gbps']:.1f} GB/s, B_g {links['B_g_tbps']:.3f} TB/s, r* = {r_star:.4f}")

    host_ctas, host_window, host_source = 8, 16384, "built-in default"
    if not args.skip_congestion:
        log("congestion probe: host CTAs x window against a concurrent HBM stream")
        try:
            cong = run_congestion_probe(reps=args.congestion_reps, progress=lambda m: log("  " + m))
        except Exception as exc:  # keep the op measurements: fall back to the defaults
            torch.cuda.synchronize()
            cong = None
            doc["congestion"] = {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
            log(f"congestion probe failed ({doc['congestion']['error']}); using the defaults")
        if cong is not None:
            doc["congestion"] = cong
            host_ctas = cong["choice"]["host_ctas"]
            host_window = window_to_host_steps(cong["choice"]["window_bytes"]) * HOST_WINDOW_UNIT
            host_source = "congestion probe of this run"
            log(f"congestion choice: {cong['choice']}")
        results.flush()
        if cong is not None and args.profile_out:
            import dataclasses

            updated = dataclasses.replace(profile, host_congestion=cong["profile_field"])
            args.profile_out.parent.mkdir(parents=True, exist_ok=True)
            updated.save(args.profile_out)
            log(f"profile with host_congestion -> {args.profile_out}")
    if args.host_ctas is not None:
        host_ctas, host_source = args.host_ctas, "--host-ctas"
    if args.host_window is not None:
        host_window = args.host_window
    doc["host_config"] = {"host_ctas": host_ctas, "host_window_bytes": host_window, "source": host_source}
    results.flush()
    info = gpu_info(dev_index)
    log(f"smemkit host config: {host_ctas} CTAs x {host_window} B ({host_source}); {info.sm_count} SMs")

    stopped = False
    for n_out, k in shapes:
        if stopped:
            break
        wbytes = n_out * k * 2
        w = (torch.randn(n_out, k, device="cuda", dtype=torch.float32) * k ** -0.5).to(torch.bfloat16)
        w_copy = w.clone()  # copy_then_cublas's HBM weight (host rows are copied into its tail)
        w64 = w.double()
        inputs = {}
        for batch in batches:
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            ref = x.double() @ w64.T
            inputs[batch] = (x, ref, float(ref.norm()))
        del w64
        cublas_done: dict[int, dict] = {}
        for label in [r.strip() for r in args.ratios.split(",") if r.strip()]:
            if stopped:
                break
            label, r = parse_ratio(label, r_star)
            sw = SplitWeight(w, r)
            r_act, n_hbm = sw.ratio, sw.n_hbm
            try:
                host_view, uva_impl = sw.host_cuda_view(), "cublas_on_uva_view"
            except Exception as exc:  # torch refused the aliasing tensor
                host_view, uva_impl = None, f"split_linear_all_host_ctas ({type(exc).__name__})"
            for batch in batches:
                if time.time() - t_start > args.budget_s:
                    log(f"budget of {args.budget_s:.0f} s used: stopping (records so far are in {args.out})")
                    stopped = True
                    break
                x, ref, ref_norm = inputs[batch]
                flops = 2.0 * batch * n_out * k
                io_bytes = wbytes + batch * k * 2 + batch * n_out * 2
                ideal_split = max(r_act * wbytes / b_h, (1 - r_act) * wbytes / b_g, flops / hw.flops_per_s)
                ideal_hbm = max(wbytes / b_g, flops / hw.flops_per_s)

                def m_smemkit(out=None, sw=sw, x=x, hc=host_ctas, hw_=host_window):
                    return split_linear(x, sw, host_ctas=hc, host_window=hw_, out=out)

                def m_cublas(out=None, x=x, w=w):
                    y = F.linear(x, w)
                    return out.copy_(y) if out is not None else y

                def m_uva(out=None, sw=sw, x=x, host_view=host_view, n_hbm=n_hbm, hw_=host_window):
                    if host_view is None:  # every CTA but one on the host rows (the plan clamps)
                        return split_linear(x, sw, host_ctas=1 << 20, host_window=hw_, out=out)
                    parts = []
                    if n_hbm:
                        parts.append(F.linear(x, sw.hbm))
                    if sw.host_rows:
                        parts.append(F.linear(x, host_view))
                    y = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
                    return out.copy_(y) if out is not None else y

                def m_copy(out=None, sw=sw, x=x, n_hbm=n_hbm, w_copy=w_copy):
                    if sw.host_rows:
                        w_copy[n_hbm:].copy_(sw.host, non_blocking=True)
                    y = F.linear(x, w_copy)
                    return out.copy_(y) if out is not None else y

                for method, fn in (("smemkit", m_smemkit), ("cublas_hbm", m_cublas), ("uva", m_uva),
                                   ("copy_then_cublas", m_copy)):
                    rec = {"op": "linear", "shape": [n_out, k], "dtype": "bfloat16", "batch": batch,
                           "r": label, "r_value": r, "r_actual": 0.0 if method == "cublas_hbm" else r_act,
                           "host_rows": 0 if method == "cublas_hbm" else sw.host_rows, "method": method}
                    ideal = ideal_hbm if method == "cublas_hbm" else ideal_split
                    try:
                        if method == "cublas_hbm" and batch in cublas_done:
                            rec.update(cublas_done[batch], measured_once_per_batch=True)
                        else:
                            rec["rel_err"] = _rel_err(fn, ref, ref_norm, batch, n_out)
                            tm, mode = timed(fn, args.reps, args.warmup)
                            rec.update(tm, timing=mode, ideal_ms=ideal * 1e3,
                                       ms_over_ideal=tm["ms"] / (ideal * 1e3),
                                       eff_gbps=io_bytes / (tm["ms"] * 1e-3) / 1e9)
                            if method == "cublas_hbm":
                                keep = ("rel_err", "ms", "p20_ms", "p80_ms", "samples", "timing", "ideal_ms",
                                        "ms_over_ideal", "eff_gbps")
                                cublas_done[batch] = {key: rec[key] for key in keep}
                        if method == "uva":
                            rec["impl"] = uva_impl
                        if method == "smemkit":
                            rec["host_ctas"], rec["host_window_bytes"] = host_ctas, host_window
                            rec["plan"] = launch_plan_for(batch, sw, host_ctas=host_ctas,
                                                          host_window=host_window).as_dict()
                    except Exception as exc:  # keep going: one failing method must not lose the run
                        torch.cuda.synchronize()
                        rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                        log(f"  {method} failed: {rec['error']}")
                    results.add(rec)
                if sw.host_rows == sw.shape[0]:  # r = 1: the host read paths side by side
                    _compare_host_paths(doc, results, x, sw, host_ctas, host_window, args, wbytes, batch)
                line = " ".join(f"{q['method']}={q.get('ms', float('nan')):.4f}"
                                for q in doc["records"][-len(METHODS):])
                log(f"{n_out}x{k} B={batch} r={label} ({r_act:.4f}): ideal {ideal_split * 1e3:.4f} ms "
                    f"| {line}")
            del host_view
            sw.free()
        del w, w_copy, inputs
        torch.cuda.empty_cache()
    doc["status"] = "budget_exhausted" if stopped else "complete"
    doc["elapsed_s"] = time.time() - t_start
    results.flush()
    print_table(doc)
    return 0


def print_table(doc: dict) -> None:
    rows: dict[tuple, dict] = {}
    for r in doc["records"]:
        key = (tuple(r["shape"]), r["batch"], r["r"])
        rows.setdefault(key, {"r_actual": r["r_actual"]})[r["method"]] = r
        if r["method"] == "smemkit":
            rows[key]["r_actual"] = r["r_actual"]
    print()
    print(f"{'shape':>12} {'B':>3} {'r':>5} {'r_act':>7} {'ideal':>8} {'smemkit':>8} {'x ideal':>7} "
          f"{'cublas':>8} {'uva':>8} {'copy+cb':>8} {'err':>8}   (ms)")
    for (shape, batch, label), d in rows.items():
        def ms(m, d=d):
            v = d.get(m, {}).get("ms")
            return f"{v:8.4f}" if isinstance(v, float) else f"{'-':>8}"
        s = d.get("smemkit", {})
        over = s.get("ms_over_ideal")
        err = s.get("rel_err")
        print(f"{shape[0]:>5}x{shape[1]:<6} {batch:>3} {label:>5} {d['r_actual']:7.4f} "
              f"{s.get('ideal_ms', float('nan')):8.4f} {ms('smemkit')} "
              f"{(f'{over:7.3f}' if isinstance(over, float) else '      -')} {ms('cublas_hbm')} {ms('uva')} "
              f"{ms('copy_then_cublas')} {(f'{err:8.1e}' if isinstance(err, float) else '       -')}")
    links = doc.get("links", {})
    if links:
        print(f"B_h {links['B_h_gbps']:.1f} GB/s, B_g {links['B_g_tbps']:.3f} TB/s, "
              f"r* {links['r_star']:.4f}; host config {doc.get('host_config')}; status {doc.get('status')}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.compile_only:
        return compile_only()
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
