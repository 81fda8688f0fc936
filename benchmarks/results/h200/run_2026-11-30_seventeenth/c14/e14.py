"""Experiment: the copy engine alone on host parts of the benchmark's sizes (graph-timed pinned ->
device copy_ of N MB, read flush as offload_ops.timed), and the split kernel on the same bytes as an
all-host weight: what a host part of a few MB costs at best. `python e14.py OUT.json`."""
import json, sys
import torch
sys.path.insert(0, "benchmarks")
from offload_ops import timed
from smemkit.offload import gemv
from smemkit.offload.pinned import PinnedBuffer, SplitWeight

out = {"records": []}
for mb in (1, 2, 4.13, 5.96, 11.93, 23.9, 64, 256, 1024):
    nbytes = int(mb * (1 << 20)) // 4096 * 4096
    host = PinnedBuffer(nbytes)
    src = host.tensor(torch.uint8)
    src.fill_(3)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    tm, _ = timed(lambda: dev.copy_(src, non_blocking=True), 20, 3)
    rec = {"mb": mb, "bytes": nbytes, "copy_us": tm["ms"] * 1e3, "copy_gbps": nbytes / tm["ms"] / 1e6}
    k = 14336
    rows = nbytes // (k * 2) // 16 * 16
    if 16 <= rows <= 4096:
        w = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
        sw = SplitWeight(w, 1.0)
        x = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
        tk, _ = timed(lambda: gemv.split_linear(x, sw, path="kernel"), 20, 3)
        rec.update(kernel_rows=rows, kernel_us=tk["ms"] * 1e3, kernel_gbps=rows * k * 2 / tk["ms"] / 1e6)
        sw.free(); del w
    out["records"].append(rec)
    print(rec, flush=True)
    del dev, src
    host.free()
json.dump(out, open(sys.argv[1], "w"), indent=1)
