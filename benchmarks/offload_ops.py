"""Split host/HBM linear (DAK decode GEMV) on the current GPU against cuBLAS, UVA zero-copy and
copy-then-cuBLAS, plus the host-read congestion probe (SPEC §2, issue 5). One command:

    python benchmarks/offload_ops.py                # H200 -> benchmarks/results/h200/offload_ops.json
    python benchmarks/offload_ops.py --quick        # one shape, batch 1 and 8, three ratios
    python benchmarks/offload_ops.py --compile-only # no GPU: compile every shipped kernel for sm_90a
    python benchmarks/offload_ops.py --sweep        # <= ~90 s: kernel configurations vs cuBLAS

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
   and replayed, so Python launch overhead stays out; L2 flushed before each repetition by a clean
   read, flush_kind="read", so no flusher's dirty lines are written back inside a timing):
     smemkit           split_linear: at batch <= 64 host rows read in place by the
                       congestion-controlled CTAs, HBM rows by the rest, one kernel; at r = 0
                       cuBLAS; past 64 rows the ring path (cuBLAS GEMMs, host rows copied by the
                       copy engine through a two-slot HBM ring under them); record "path";
                       the paths auto did not take are timed too (kernel_ms, ring_ms, and past
                       64 rows direct_ms: DAK's direct-access GEMM of the host rows beside cuBLAS,
                       smemkit.offload.direct_gemm)
     cublas_hbm        torch.nn.functional.linear on the whole weight in HBM (the upper bound),
                       timed at every point after smemkit (and the path auto did not take, where
                       that is timed too): dense GEMMs at batch 512 run below the top SM clock, and
                       one call moved 10-20 % between rounds (8192x28672: 306-368 us with the
                       SM clock at 1350-1980 MHz, commit eb6986e), so each point is compared with
                       a cuBLAS timed moments apart
     uva               UVA zero-copy as vLLM's CPU offload does it: cuBLAS (F.linear) on the HBM rows
                       and cuBLAS on a CUDA tensor aliasing the pinned host rows (read in place
                       over PCIe), outputs concatenated; where torch refuses the aliasing tensor,
                       split_linear with every CTA but one reading host rows ("impl" says which)
     copy_then_cublas  copy the host rows into their place in an HBM copy of the weight
                       (cudaMemcpyAsync), then one cuBLAS call
   Ratios: 0, r*, r_hide = C/F x B_h / W at the largest batch (per byte of bf16 weight: batch x
   B_h / F; at or below it the host reads can hide under compute), 0.05 ... 1.
   Each record: op, shape, batch, r (asked), r_actual (host rows / N), method, ms (median), ideal_ms =
   max(r W / B_h, (1 - r) W / B_g, C / F) with B_h, B_g from step 1 and F the profile's bf16 rate,
   ms_over_ideal, eff_gbps = (weight + x + y bytes) / time, rel_err, sm_mhz (the SM clock read
   after the timing, NVML through torch; None where it cannot be read); with host rows also
   host_copy_ms (the copy engine alone on this point's host rows, timed as the methods, once per
   shape and ratio) and ideal_copy_ms = max(host_copy_ms, (1 - r) W / B_g, C / F), the ideal with
   the copy of this host part in place of r W / B_h (B_h is a 1 GiB copy's rate, which a copy of a
   few MB does not reach: the copy alone took 1.21-1.29x the ideal at r* of the 117 MB weights,
   commit d846a0b), and
   ms_over_ideal_copy. The smemkit record of such a point also carries each path's parts timed
   alone (``_floors``): hbm_rows_ms (cuBLAS on the HBM rows), host_copy_then_op_ms (the copy, then
   a 1-element op waiting for it on the caller's stream), host_kernel_ms (batch <= 64: the split
   kernel on the host rows alone), and floor_ms = min(max(copy then op, HBM rows), max(host
   kernel, HBM rows)), the least a path built from those parts takes; floor_over_ideal.
A table is printed last.

--sweep times a few launch configurations of split_linear (HBM pipeline depth, CTAs per SM, k-split,
host CTAs x window, staged / direct / prefetched host groups, ld.global.cs / .nc host reads) at r = 0, 0.25
and 1 for 8192x28672 and 4096x14336 at batch 1, 8, 64, against cuBLAS and the ideal, checks each
result against float64, and writes one JSON record per configuration plus the best configuration
per point (--sweep-out, default benchmarks/results/h200/offload_sweep.json); it stops starting new
configurations after --sweep-budget-s (90 s).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "h200" / "offload_ops.json"
DEFAULT_SWEEP_OUT = ROOT / "benchmarks" / "results" / "h200" / "offload_sweep.json"
SWEEP_SHAPES = ((8192, 28672), (4096, 14336))
SWEEP_RATIOS = (0.0, 1.0, 0.25)
SHAPES = ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192))
BATCHES = (1, 8, 64, 512)
RATIOS = ("0", "r*", "r_hide", "0.05", "0.1", "0.25", "0.5", "1.0")
METHODS = ("smemkit", "cublas_hbm", "uva", "copy_then_cublas")


def log(msg: str) -> None:
    print(f"[offload_ops {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    p.add_argument("--shapes", default=",".join(f"{n}x{k}" for n, k in SHAPES),
                   help="weight shapes N_outxK, comma-separated")
    p.add_argument("--batches", default=",".join(map(str, BATCHES)),
                   help="batch sizes (> 64: the large-batch ring path)")
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
    p.add_argument("--sweep", action="store_true",
                   help="time kernel configurations (depth, CTAs/SM, splits, host window/stage/load) at "
                        "r = 0, 0.25, 1 against cuBLAS; writes --sweep-out")
    p.add_argument("--sweep-out", type=Path, default=DEFAULT_SWEEP_OUT)
    p.add_argument("--sweep-budget-s", type=float, default=90.0)
    p.add_argument("--sweep-shapes", default=",".join(f"{n}x{k}" for n, k in SWEEP_SHAPES))
    p.add_argument("--sweep-reps", type=int, default=10)
    args = p.parse_args(argv)
    if args.quick:
        args.shapes, args.batches, args.ratios = "4096x14336", "1,8", "0,r*,0.25"
    return args


def compile_only() -> int:
    import torch

    from smemkit.offload import direct_gemm, gemv
    from smemkit.runtime.compiler import compile_module, package_source

    shipped = [gemv.compile_variant(dtype, "sm_90a", host_load, host_stage)
               for dtype, host_load, host_stage in gemv.shipped_variants()]
    shipped += [direct_gemm.compile_variant(dtype, "sm_90a") for dtype in (torch.bfloat16, torch.float16)]
    probe = compile_module(package_source("offload/congestion.cu"), "offload/congestion", arch="sm_90a")
    ok = True
    for m in [*shipped, probe]:
        for name, u in sorted(m.resources.items()):
            log(f"{m.label}:{name}: {u.registers} registers, {u.static_smem_bytes} B smem, "
                f"spills {u.spill_store_bytes}/{u.spill_load_bytes}, stack {u.stack_bytes}")
            ok &= not u.spills and (m is probe or u.stack_bytes == 0)
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

    # no persisting-L2 reset in this process: nothing timed here keeps lines with evict_last, and
    # after a reset the ring ran 2-3.5 % slower; the L2 flushed by a clean read, not a fill whose
    # dirty lines the op would write back: every time here is held against a bandwidth bound
    # (runtime.timing's docstring)
    probe = time_gpu(fn, warmup=1, reps=1, warm_ms=0, reset_persisting_l2=False)  # sizing only
    if probe.median_ms > SLOW_CALL_MS:
        reps, warmup = max(5, reps // 4), 1
    try:
        t = time_gpu(fn, warmup=warmup, reps=reps, graph=True, flush_l2=True, flush_kind="read",
                     reset_persisting_l2=False)
        mode = "cuda_graph"
    except Exception as exc:  # a baseline torch refuses to capture: time it eagerly
        torch.cuda.synchronize()
        log(f"  graph capture failed ({type(exc).__name__}: {str(exc)[:120]}); timing eagerly")
        t = time_gpu(fn, warmup=warmup, reps=reps, graph=False, flush_l2=True, flush_kind="read",
                     reset_persisting_l2=False)
        mode = "eager"
    return {"ms": t.median_ms, "p20_ms": t.p20_ms, "p80_ms": t.p80_ms, "samples": t.samples,
            "sm_mhz": sm_clock_mhz()}, mode


def timed_ms(fn, args) -> float:
    """The median of ``timed`` with the run's repetitions: a part timed alone (floors, host copies)."""
    return timed(fn, args.reps, args.warmup)[0]["ms"]


def sm_clock_mhz() -> int | None:
    """The SM clock now (NVML, through torch), or None where it cannot be read."""
    import torch

    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # no NVML (pynvml / amdsmi) in this environment
        return None


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
                       reps=max(5, reps // 2), reset_persisting_l2=False)  # as in timed()
        del dev
    m = 2 << 30
    src = torch.ones(m, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t_g = time_gpu(lambda dst=dst, src=src: dst.copy_(src), warmup=3, reps=reps, reset_persisting_l2=False)
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
    """All rows on the host: the default (ld.global.cs groups staged through shared memory,
    host_stage=1), fragments loaded directly (host_stage=0), the staged path with
    the next group prefetched before the math (host_stage=2), groups bulk-copied into shared memory
    by the copy engine (cp.async.bulk, host_stage=3), and ld.global.nc instead of .cs (host_load=1),
    as GB/s of weight; stored under "host_path_comparison"."""
    import torch

    from smemkit.offload.gemv import split_linear

    entry = {"shape": list(sw.shape), "batch": batch, "host_ctas": host_ctas,
             "host_window_bytes": host_window}
    for name, kw in (("host_stage1", {}), ("host_stage0", {"host_stage": 0}),
                     ("host_stage2", {"host_stage": 2}), ("host_stage3", {"host_stage": 3}),
                     ("host_load1", {"host_load": 1})):
        def call(kw=kw):
            return split_linear(x, sw, host_ctas=host_ctas, host_window=host_window, **kw)

        try:
            tm, mode = timed(call, args.reps, args.warmup)
            gbps = wbytes / (tm["ms"] * 1e-3) / 1e9
            entry[name] = {**tm, "timing": mode, "weight_gbps": gbps, "kwargs": kw}
        except Exception as exc:
            torch.cuda.synchronize()
            entry[name] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    doc.setdefault("host_path_comparison", []).append(entry)
    results.flush()


def copy_then_op(pairs):
    """A call that copies each (HBM destination, pinned source) pair on a side stream, then runs a
    1-element op on the caller's stream that waits for them: the least any path that computes on
    copied host data (the ring, copy_then_cublas) adds to the copy (6-10 us over the copy alone in
    a graph on the H200, commit 4eef3ec)."""
    import torch

    side = torch.cuda.Stream()
    landed = torch.cuda.Event()
    flag = torch.zeros(1, device=pairs[0][0].device)

    def call():
        main = torch.cuda.current_stream()
        side.wait_stream(main)
        with torch.cuda.stream(side):
            for dst, src in pairs:
                dst.copy_(src, non_blocking=True)
            landed.record(side)
        main.wait_event(landed)
        flag.add_(1)

    return call


def guarded(what: str, fallback, make, *args):
    """``make(*args)``, or ``fallback`` after logging the error: a failing floor or helper must not
    lose the run's records."""
    import torch

    try:
        return make(*args)
    except Exception as exc:
        torch.cuda.synchronize()
        log(f"  {what} failed ({type(exc).__name__}: {str(exc)[:200]})")
        return fallback


def floor_of(hbm_ms: float, copy_then_op_ms: float | None, host_kernel_ms: float | None) -> float:
    """The least a path built from parts timed alone can take: the HBM part beside the host part
    copied then used, or beside the split kernel reading the host part alone (where timed); the HBM
    part alone when there is no host part."""
    floors = [max(hbm_ms, host) for host in (copy_then_op_ms, host_kernel_ms) if host is not None]
    return min(floors) if floors else hbm_ms


def _floors(x, sw, sw_host, copy_then_op_ms, host_ctas, host_window, args) -> dict:
    """The least each offloading path can take at this point, from its parts timed alone: cuBLAS on
    the HBM rows (the fastest HBM stream measured), the host rows copied then used
    (host_copy_then_op_ms), and at decode batches the split kernel on the host rows alone
    (host_kernel_ms: its in-place reads with nothing beside them). floor_ms is the smaller of
    max(copy then op, HBM rows) and, at decode batches, max(host kernel, HBM rows): where it is
    above 1.12x the ideal no path built from these parts meets the bar."""
    import torch.nn.functional as F

    from smemkit.offload.gemv import MAX_BATCH, split_linear

    out = {"host_copy_then_op_ms": copy_then_op_ms,
           "hbm_rows_ms": timed_ms(lambda: F.linear(x, sw.hbm), args) if sw.n_hbm else 0.0}
    if x.shape[0] <= MAX_BATCH and sw_host is not None:
        out["host_kernel_ms"] = timed_ms(lambda: split_linear(x, sw_host, host_ctas=host_ctas,
                                                              host_window=host_window, path="kernel"), args)
    out["floor_ms"] = floor_of(out["hbm_rows_ms"], copy_then_op_ms, out.get("host_kernel_ms"))
    return out


def random_weight(n_out: int, k: int):
    """An (n_out, k) bf16 weight on the GPU with unit-variance outputs for unit inputs."""
    import torch

    return (torch.randn(n_out, k, device="cuda", dtype=torch.float32) * k ** -0.5).to(torch.bfloat16)


def parse_ratio(text: str, r_star: float, r_hide: float | None = None) -> tuple[str, float]:
    """A ratio label and its value: "r*" (the memory-bound balance B_h / (B_h + B_g)), "r_hide"
    (the large-batch hide threshold C/F x B_h / W at the largest batch) or a number."""
    text = text.strip()
    if text in ("r*", "rstar"):
        return text, r_star
    if text == "r_hide":
        if r_hide is None:
            raise ValueError("r_hide is only defined for the linear benchmark")
        return text, r_hide
    return text, float(text)


def run(args: argparse.Namespace) -> int:
    import torch
    import torch.nn.functional as F

    from smemkit.hw.environment import device_block, provenance
    from smemkit.hw.profile import select_profile
    from smemkit.offload.cli import parse_shape
    from smemkit.offload.congestion import run_congestion_probe
    from smemkit.offload.costmodel import hardware_from_profile
    from smemkit.offload.gemv import (
        HOST_WINDOW_UNIT,
        MAX_BATCH,
        launch_plan_for,
        linear_path,
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
    shapes = [parse_shape(s) for s in args.shapes.split(",") if s]
    batches = [int(b) for b in args.batches.split(",") if b]
    device = device_block()
    doc = {
        "benchmark": "offload_ops", "status": "running", "provenance": provenance(device),
        "device": device, "profile": profile.name, "profile_reason": why,
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
        "timing": "smemkit.runtime.timing.time_gpu(graph=True, flush_l2=True, flush_kind='read', "
                  "reset_persisting_l2=False): CUDA events around replays of one captured call, "
                  "median; eager where capture fails (record 'timing')",
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
            host_ctas = cong["profile_field"]["split_gemv_host_ctas"]
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
        w = random_weight(n_out, k)
        w_copy = w.clone()  # copy_then_cublas's HBM weight (host rows are copied into its tail)
        w64 = w.double()
        inputs = {}
        for batch in batches:
            x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
            ref = x.double() @ w64.T
            inputs[batch] = (x, ref, float(ref.norm()))
        del w64
        for label in [r.strip() for r in args.ratios.split(",") if r.strip()]:
            if stopped:
                break
            label, r = parse_ratio(label, r_star, max(batches) * b_h / hw.flops_per_s)
            sw = SplitWeight(w, r)
            r_act, n_hbm = sw.ratio, sw.n_hbm
            host_copy_ms = host_copy_then_op_ms = sw_host = None
            if sw.host_rows:  # the copy engine alone on this host part: the least moving it costs
                dst = w_copy[n_hbm:]
                host_copy_ms = timed_ms(lambda dst=dst, sw=sw: dst.copy_(sw.host, non_blocking=True), args)
                host_copy_then_op_ms = timed_ms(copy_then_op([(dst, sw.host)]), args)
                # the host rows alone, for the kernel path's floor (at r = 1 the weight itself)
                sw_host = sw if sw.n_hbm == 0 else guarded("the host-only weight", None,
                                                           SplitWeight, sw.host, 1.0)
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
                ideal_split_no_host = max((1 - r_act) * wbytes / b_g, flops / hw.flops_per_s)

                def m_smemkit(out=None, sw=sw, x=x, hc=host_ctas, hw_=host_window, path="auto"):
                    return split_linear(x, sw, host_ctas=hc, host_window=hw_, out=out, path=path)

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

                floors = {}
                if sw.host_rows:
                    floors = guarded("the floors", {"floor_error": "failed (logged)"}, _floors, x, sw,
                                     sw_host, host_copy_then_op_ms, host_ctas, host_window, args)
                for method, fn in (("smemkit", m_smemkit), ("cublas_hbm", m_cublas), ("uva", m_uva),
                                   ("copy_then_cublas", m_copy)):
                    rec = {"op": "linear", "shape": [n_out, k], "dtype": "bfloat16", "batch": batch,
                           "r": label, "r_value": r, "r_actual": 0.0 if method == "cublas_hbm" else r_act,
                           "host_rows": 0 if method == "cublas_hbm" else sw.host_rows, "method": method}
                    ideal = ideal_hbm if method == "cublas_hbm" else ideal_split
                    try:
                        rec["rel_err"] = _rel_err(fn, ref, ref_norm, batch, n_out)
                        tm, mode = timed(fn, args.reps, args.warmup)
                        rec.update(tm, timing=mode, ideal_ms=ideal * 1e3,
                                   ms_over_ideal=tm["ms"] / (ideal * 1e3),
                                   eff_gbps=io_bytes / (tm["ms"] * 1e-3) / 1e9)
                        if host_copy_ms is not None and method != "cublas_hbm":
                            ideal_copy = max(host_copy_ms, ideal_split_no_host * 1e3)
                            rec.update(host_copy_ms=host_copy_ms, ideal_copy_ms=ideal_copy,
                                       ms_over_ideal_copy=tm["ms"] / ideal_copy)
                        if method == "uva":
                            rec["impl"] = uva_impl
                        if method == "smemkit":
                            rec.update(floors)
                            if "floor_ms" in floors:
                                rec["floor_over_ideal"] = floors["floor_ms"] / (ideal * 1e3)
                            rec["host_ctas"], rec["host_window_bytes"] = host_ctas, host_window
                            rec["r_hide"] = flops / hw.flops_per_s * b_h / wbytes
                            chosen = linear_path(sw, batch)
                            rec["path"] = chosen
                            # the paths auto did not take, timed too (direct: large batches only)
                            for other in ("kernel", "ring", "direct"):
                                if (other == chosen or (other == "kernel" and batch > MAX_BATCH and r > 0.1)
                                        or (other == "direct" and (batch <= MAX_BATCH or r == 0))):
                                    continue
                                alt, _ = timed(partial(m_smemkit, path=other), args.reps, args.warmup)
                                rec[f"{other}_ms"] = alt["ms"]
                            if batch <= MAX_BATCH:
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
            if sw_host is not None:
                sw_host.free()
        del w, w_copy, inputs
        torch.cuda.empty_cache()
    doc["status"] = "budget_exhausted" if stopped else "complete"
    doc["elapsed_s"] = time.time() - t_start
    doc["summary"] = summary(doc["records"])
    results.flush()
    print_table(doc)
    print("summary:", json.dumps(doc["summary"]))
    return 0


def sweep_configs(nt: int, r: float, plan) -> list[tuple[str, dict]]:
    """(label, split_linear keyword arguments) to time at one point; ``plan`` is the default plan."""
    from smemkit.offload import gemv

    cfgs: list[tuple[str, dict]] = [("default", {})]
    if r < 1.0:  # the HBM side: pipeline depth (bytes in flight), CTAs per SM, k-split
        for d in sorted({1, 2, 3, 4, 5} - {plan.hbm_depth}):
            if d <= gemv.max_hbm_depth(nt):
                cfgs.append((f"hbm_depth={d}", {"hbm_depth": d}))
        if gemv.MIN_CTAS_PER_SM[nt] > 1:
            cfgs.append(("ctas_per_sm=1", {"ctas_per_sm": 1}))
            cfgs.append(("ctas_per_sm=1,hbm_depth=5", {"ctas_per_sm": 1, "hbm_depth": 5}))
        for f in (0.5, 2.0):
            sg = max(1, round(plan.split_g * f))
            if sg != plan.split_g:
                cfgs.append((f"split_g={sg}", {"split_g": sg}))
    if r > 0.0:  # the host side: congestion window, host CTAs, staging / prefetch, load instruction
        cfgs += [("host 8x32K", {"host_ctas": 8, "host_window": 32768}),
                 ("host 12x16K", {"host_ctas": 12, "host_window": 16384}),
                 ("host 16x16K", {"host_ctas": 16, "host_window": 16384}),
                 ("host 16x8K", {"host_ctas": 16, "host_window": 8192}),
                 ("host direct fragments (host_stage=0)", {"host_stage": 0}),
                 ("host prefetch (host_stage=2)", {"host_stage": 2}),
                 ("host prefetch 16x16K", {"host_stage": 2, "host_ctas": 16, "host_window": 16384}),
                 ("host bulk copies (host_stage=3)", {"host_stage": 3}),
                 ("host bulk copies 16x16K", {"host_stage": 3, "host_ctas": 16, "host_window": 16384}),
                 ("host ld.global.nc (host_load=1)", {"host_load": 1})]
    return cfgs


def sweep(args: argparse.Namespace) -> int:
    """Several kernel configurations per (shape, batch, r) against cuBLAS: see the module docstring."""
    import torch
    import torch.nn.functional as F

    from smemkit.hw.environment import device_block, provenance
    from smemkit.hw.profile import select_profile
    from smemkit.offload import gemv
    from smemkit.offload.cli import parse_shape
    from smemkit.offload.costmodel import hardware_from_profile
    from smemkit.offload.gemv import launch_plan_for, split_linear
    from smemkit.offload.pinned import SplitWeight
    from smemkit.runtime.device import require_gpu

    t_start = time.time()
    require_gpu()
    torch.manual_seed(0)
    profile, _why = select_profile()
    hw = hardware_from_profile(profile)
    device = device_block()
    doc = {"benchmark": "offload_ops --sweep", "status": "running", "provenance": provenance(device),
           "device": device, "records": [], "best": []}
    results = Results(args.sweep_out, doc)
    links = measure_links(10)
    doc["links"] = links
    b_h, b_g = links["B_h_bytes_per_s"], links["B_g_bytes_per_s"]
    log(f"sweep: B_h {links['B_h_gbps']:.1f} GB/s, B_g {links['B_g_tbps']:.3f} TB/s")
    hc0, hw0 = 8, 16384  # the congestion probe's choice on the H200 (commit 8963877)
    doc["default_host"] = {"host_ctas": hc0, "host_window": hw0}
    shapes = [parse_shape(sh) for sh in args.sweep_shapes.split(",") if sh]
    stopped = False
    for n_out, k in shapes:
        if stopped:
            break
        wbytes = n_out * k * 2
        w = random_weight(n_out, k)
        for r in SWEEP_RATIOS:
            if stopped:
                break
            sw = SplitWeight(w, r)
            for batch in BATCHES:
                if time.time() - t_start > args.sweep_budget_s:
                    stopped = True
                    log(f"sweep budget of {args.sweep_budget_s:.0f} s used: stopping")
                    break
                x = torch.randn(batch, k, device="cuda", dtype=torch.bfloat16)
                ref = x.double() @ w.double().T
                ref_norm = float(ref.norm())
                ideal = max(sw.ratio * wbytes / b_h, (1 - sw.ratio) * wbytes / b_g,
                            2.0 * batch * n_out * k / hw.flops_per_s) * 1e3
                cub, _ = timed(lambda x=x, w=w: F.linear(x, w), args.sweep_reps, 1)
                plan0 = launch_plan_for(batch, sw, host_ctas=hc0, host_window=hw0)
                point = []
                for label, kw in sweep_configs(plan0.nt, sw.ratio, plan0):
                    kw = {"host_ctas": hc0, "host_window": hw0, **kw}
                    rec = {"shape": [n_out, k], "batch": batch, "r": r, "r_actual": sw.ratio,
                           "config": label, "kwargs": kw, "ideal_ms": ideal, "cublas_ms": cub["ms"]}
                    try:
                        keys = ("host_ctas", "host_window", "host_load", "host_stage", "split_g", "split_h",
                                "hbm_depth", "ctas_per_sm")
                        plan_kw = {key: kw[key] for key in keys if key in kw}
                        rec["plan"] = launch_plan_for(batch, sw, **plan_kw).as_dict()

                        def call(out=None, x=x, sw=sw, kw=kw):
                            return split_linear(x, sw, out=out, **kw)

                        rec["rel_err"] = _rel_err(call, ref, ref_norm, batch, n_out)
                        tm, mode = timed(call, args.sweep_reps, 1)
                        rec.update(tm, timing=mode, x_ideal=tm["ms"] / ideal, x_cublas=tm["ms"] / cub["ms"],
                                   host_gbps=(sw.host_rows * k * 2 / (tm["ms"] * 1e-3) / 1e9
                                              if sw.ratio == 1.0 else None))
                        ok = rec["rel_err"] < 1e-2
                        rec["correct"] = ok
                    except Exception as exc:
                        torch.cuda.synchronize()
                        rec["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                    results.add(rec)
                    point.append(rec)
                    extra = (f" host {rec['host_gbps']:.1f} GB/s" if rec.get("host_gbps") else "")
                    log(f"  {n_out}x{k} B={batch:2d} r={r:<4} {label:32s} "
                        + (f"{rec['ms']:.4f} ms  x{rec['x_ideal']:.3f} ideal  x{rec['x_cublas']:.3f} cuBLAS"
                           f"{extra}  err {rec['rel_err']:.1e}" if "ms" in rec else rec.get("error", "?")))
                good = [q for q in point if q.get("correct")]
                if good:
                    best = min(good, key=lambda q: q["ms"])
                    doc["best"].append({"shape": [n_out, k], "batch": batch, "r": r,
                                        "config": best["config"], "kwargs": best["kwargs"], "ms": best["ms"],
                                        "x_ideal": best["x_ideal"],
                                        "x_cublas": best["x_cublas"], "default_ms": point[0].get("ms"),
                                        "default_x_ideal": point[0].get("x_ideal"),
                                        "default_x_cublas": point[0].get("x_cublas")})
                    results.flush()
                del x, ref
            sw.free()
        del w
        torch.cuda.empty_cache()
    doc["status"] = "budget_exhausted" if stopped else "complete"
    doc["elapsed_s"] = time.time() - t_start
    doc["constants"] = {"HBM_DEPTH": gemv.HBM_DEPTH, "HBM_ROWS": gemv.HBM_ROWS,
                        "MIN_CTAS_PER_SM": gemv.MIN_CTAS_PER_SM}
    results.flush()
    print()
    print(f"{'shape':>12} {'B':>3} {'r':>5} {'default x ideal':>15} {'x cuBLAS':>9}   "
          "best config (x ideal, x cuBLAS)")
    for b in doc["best"]:
        d_ideal = b["default_x_ideal"] or float("nan")
        d_cublas = b["default_x_cublas"] or float("nan")
        print(f"{b['shape'][0]:>5}x{b['shape'][1]:<6} {b['batch']:>3} {b['r']:>5} "
              f"{d_ideal:15.3f} {d_cublas:9.3f}   "
              f"{b['config']} ({b['x_ideal']:.3f}, {b['x_cublas']:.3f})")
    return 0


def summary(records: list[dict]) -> dict:
    """The issue's counts over a run's records: offloaded points (r > 0) of the smemkit method
    within 1.12x the ideal, and within 1.12x the ideal with the host part's measured copy
    (ideal_copy_ms); r = 0 within 5 % of cuBLAS at the same point; batch 512 at r* / r_hide within
    5 % of cuBLAS at the same point; large-batch points where the direct path (direct_ms) beat the
    path auto took; of the offloaded misses, those whose floor (``_floors``; none recorded: not
    counted as over) is itself above 1.12x the ideal. Each as [count, points]."""
    by = {(tuple(r["shape"]), r["batch"], r["r"], r["method"]): r for r in records if "ms" in r}
    ours = {k[:3]: r for k, r in by.items() if k[3] == "smemkit"}

    def vs_cublas(keys):
        pairs = [(ours[k]["ms"], by[k + ("cublas_hbm",)]["ms"]) for k in keys if k + ("cublas_hbm",) in by]
        return [sum(a <= 1.05 * b for a, b in pairs), len(pairs)]

    offloaded = [r for k, r in ours.items() if k[2] != "0"]
    direct = [r for r in offloaded if "direct_ms" in r]
    with_copy = [r for r in offloaded if "ideal_copy_ms" in r]
    misses = [r for r in offloaded if r["ms"] > 1.12 * r["ideal_ms"]]  # one without a floor: not over
    return {
        "offloaded_within_1.12x_ideal": [sum(r["ms"] <= 1.12 * r["ideal_ms"] for r in offloaded),
                                         len(offloaded)],
        "offloaded_within_1.12x_ideal_copy": [sum(r["ms"] <= 1.12 * r["ideal_copy_ms"] for r in with_copy),
                                              len(with_copy)],
        "r0_within_5pct_of_cublas": vs_cublas([k for k in ours if k[2] == "0"]),
        "batch512_rstar_rhide_within_5pct_of_cublas": vs_cublas(
            [k for k in ours if k[1] == 512 and k[2] in ("r*", "r_hide")]),
        "large_batch_direct_faster_than_taken_path": [sum(r["direct_ms"] < r["ms"] for r in direct),
                                                      len(direct)],
        "misses_with_floor_over_1.12x_ideal": [sum(r.get("floor_ms", 0) > 1.12 * r["ideal_ms"]
                                                   for r in misses), len(misses)],
    }


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
    if args.sweep:
        return sweep(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
