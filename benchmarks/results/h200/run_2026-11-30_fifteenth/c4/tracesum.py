"""Summarise an nsys cuda_gpu_trace CSV: per kind (H2D copy, GEMM-like kernel, other), count and
median duration; copies also median GB/s; and the median gap from each H2D copy's end to the
next kernel's start on the copy's stream... (kept simple: per-name medians)."""
import csv, json, statistics, sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
by = defaultdict(list)
for r in rows:
    name = r.get("Name", "")
    dur = float(r.get("Duration (ns)") or 0)
    size = r.get("Bytes (MB)") or r.get("Size (MB)") or ""
    key = "[memcpy HtoD]" if "HtoD" in name else ("[memcpy DtoD]" if "DtoD" in name else name[:70])
    by[key].append((dur, float(size) if size else None))
out = {}
for key, v in sorted(by.items(), key=lambda kv: -sum(d for d, _ in kv[1])):
    durs = [d for d, _ in v]
    entry = {"count": len(v), "median_us": statistics.median(durs) / 1e3, "total_us": sum(durs) / 1e3}
    sizes = [s for _, s in v if s]
    if sizes:
        entry["median_MB"] = statistics.median(sizes)
        entry["median_GBps"] = statistics.median(s * 1e6 / d for d, s in v if s and d)  # MB*1e6 B / ns = GB/s
    out[key] = entry
json.dump(out, open(sys.argv[2], "w"), indent=1)
for k, e in list(out.items())[:8]:
    print(f"  {k[:60]:60s} n={e['count']:5d} med {e['median_us']:8.2f} us" + (f" {e['median_GBps']:6.1f} GB/s" if 'median_GBps' in e else ""))
