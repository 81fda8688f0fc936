"""Host reads by the SMs' copy engine (cp.async.bulk, TMA, TMA multicast) against 16-byte loads and
the copy engine's own host-to-device rate, in one run (issue 5: choose the host-read instruction
by measurement and record the comparison).

    python benchmarks/host_paths.py --out benchmarks/results/h200/host_paths.json
    python benchmarks/host_paths.py --methods load,bulk     # a subset (the JSON holds only those)

Steps (the JSON is rewritten after each, so a timeout or a fault keeps what was measured):
1. ``copy_engine``: pinned host -> device ``copy_(non_blocking=True)`` of the probe's buffer
   (median of 5), the B_h of offload_ops;
2. ``load``: the congestion probe's host role alone (``ld.global.cs``, 256 threads, H CTAs x
   window bytes in flight), median of 3;
3. ``bulk`` / ``tma`` / ``tma_multicast`` (``smemkit.offload.host_paths``): H CTAs x copy size x
   ring depth, every point's data checked (XOR of every landed word against the source);
   link rate = bytes that crossed the link / span of the CTAs' %globaltimer stamps, median of 3.
The table printed last gives, per method, the best link rate at each H.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import torch

from smemkit.hw.environment import device_block, provenance
from smemkit.offload.congestion import CongestionProbe
from smemkit.offload.host_paths import HostPathProbe, PathPoint

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "h200" / "host_paths.json"
CTAS = (1, 2, 4, 8, 16, 32, 132)
BULK_CHUNKS = (256, 1024, 4096, 16384, 32768)
TMA_ROWS = (64, 128, 256)  # x 64 bf16 columns (128 B, 128-byte swizzle): 8, 16, 32 KB tiles
STAGES = (2, 4, 6)
LOAD_WINDOWS = (16384, 65536)
REPS = 3


def median_point(points: list[PathPoint]) -> PathPoint:
    """The repetition with the median link rate (all must have checked out)."""
    ordered = sorted(points, key=lambda p: p.link_gbps)
    mid = ordered[len(ordered) // 2]
    return dataclasses.replace(mid, data_ok=all(p.data_ok for p in points))


def copy_engine_gbps(probe: HostPathProbe) -> float:
    src = probe.host.tensor(torch.uint8)
    dst = torch.empty_like(src, device=f"cuda:{probe.device_index}")
    times = []
    for _ in range(6):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src, non_blocking=True)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return src.numel() / (statistics.median(times[1:]) * 1e6)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--methods", default="load,bulk,tma,tma_multicast")
    parser.add_argument("--host-mib", type=int, default=128)
    args = parser.parse_args()
    methods = set(args.methods.split(","))
    device = device_block()
    out: dict = {"provenance": provenance(device), "device": device, "host_bytes": args.host_mib << 20,
                 "reps": REPS, "records": []}

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")

    probe = HostPathProbe(host_mib=args.host_mib)
    try:
        out["copy_engine_gbps"] = copy_engine_gbps(probe)
        print(f"copy engine host->device: {out['copy_engine_gbps']:.2f} GB/s", flush=True)
        save()
        if "load" in methods:
            cprobe = CongestionProbe(host_mib=args.host_mib, hbm_mib=64)
            try:
                cprobe.run(1, LOAD_WINDOWS[0], grid=1, host_bytes=1 << 20)
                for h in CTAS:
                    for w in LOAD_WINDOWS:
                        rates = [r for r in (cprobe.run(h, w, grid=h)[0] for _ in range(REPS)) if r]
                        if not rates:  # the probe timed nothing (no bytes or no span)
                            continue
                        rec = {"method": "load", "ctas": h, "copy_bytes": 16, "stages": w // 16 // 256,
                               "P": 1, "in_flight_bytes_per_cta": w,
                               "link_gbps": statistics.median(rates), "data_ok": None}
                        rec["delivered_gbps"] = rec["link_gbps"]
                        out["records"].append(rec)
                        print(f"load          H={h:3d} window={w // 1024:3d} KB: {rec['link_gbps']:6.2f}",
                              flush=True)
            finally:
                cprobe.free()
            save()
        probe.bulk(1, 4096, 2, nbytes=1 << 20)  # load the module
        for h in CTAS:
            for s in STAGES:
                runs = []
                if "bulk" in methods:
                    runs += [(probe.bulk, (h, c, s), {}) for c in BULK_CHUNKS]
                if "tma" in methods:
                    runs += [(probe.tma, (h, r, s), {}) for r in TMA_ROWS]
                if "tma_multicast" in methods:
                    runs += [(probe.tma, (h, TMA_ROWS[-1], s), {"P": P}) for P in (2, 4) if h % P == 0]
                for fn, a, kw in runs:
                    p = median_point([fn(*a, **kw) for _ in range(REPS)])
                    out["records"].append(p.as_dict())
                    print(f"{p.method:13s} H={h:3d} P={p.P} copy={p.copy_bytes // 1024:3d} KB x {s}: link "
                          f"{p.link_gbps:6.2f} GB/s delivered {p.delivered_gbps:6.2f} data ok {p.data_ok}",
                          flush=True)
            save()
    finally:
        probe.free()
    out["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save()
    print("\nbest link GB/s per method and H (copy engine "
          f"{out['copy_engine_gbps']:.1f} GB/s):")
    names = sorted({r["method"] for r in out["records"]})
    print(f"{'H':>4} " + " ".join(f"{n:>14}" for n in names))
    for h in CTAS:
        row = []
        for n in names:
            vals = [r["link_gbps"] for r in out["records"] if r["method"] == n and r["ctas"] == h]
            row.append(f"{max(vals):14.2f}" if vals else f"{'-':>14}")
        print(f"{h:4d} " + " ".join(row))
    bad = [r for r in out["records"] if r["data_ok"] is False]
    print(f"points whose data did not check out: {len(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
