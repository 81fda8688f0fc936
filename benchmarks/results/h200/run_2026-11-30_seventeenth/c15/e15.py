"""Experiment: the copy engine alone on each offload_ops point's exact host part (pinned ->
device copy_, graph-timed as offload_ops.timed), against that point's ideal: the least any method
that moves the host bytes over the link can take. `python e15.py OUT.json`."""
import json, sys
import torch
sys.path.insert(0, "benchmarks")
from offload_ops import measure_links, parse_ratio, timed
from smemkit.offload.pinned import SplitWeight

links = measure_links(10)
b_h, b_g, r_star = links["B_h_bytes_per_s"], links["B_g_bytes_per_s"], links["r_star"]
F = 790e12
out = {"links": links, "records": []}
for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    for label in ("r*", "r_hide", "0.05", "0.1", "0.25"):
        label, r = parse_ratio(label, r_star, 512 * b_h / F)
        sw = SplitWeight(w, r)
        dev = torch.empty_like(sw.host, device="cuda")
        tm, _ = timed(lambda: dev.copy_(sw.host, non_blocking=True), 20, 3)
        wb = n * k * 2
        rec = {"shape": [n, k], "r": label, "host_rows": sw.host_rows, "host_bytes": sw.host_rows * k * 2,
               "copy_us": tm["ms"] * 1e3}
        for b in (1, 8, 64, 512):
            ideal = max(sw.ratio * wb / b_h, (1 - sw.ratio) * wb / b_g, 2.0 * b * n * k / F)
            rec[f"copy_over_ideal_b{b}"] = tm["ms"] * 1e-3 / ideal
        out["records"].append(rec)
        print({q: (round(v, 3) if isinstance(v, float) else v) for q, v in rec.items()}, flush=True)
        sw.free(); del dev
    del w; torch.cuda.empty_cache()
json.dump(out, open(sys.argv[1], "w"), indent=1)
