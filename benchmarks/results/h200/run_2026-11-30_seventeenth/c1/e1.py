"""Experiment (not shipped): does the benchmark's dirtying L2 flush (fill_ of 2 x L2) charge the
timed op with the write-back of the flusher's dirty lines? Time the same ops after four L2 states:
fill (as time_gpu), read (a clean read of 2 x L2), fill_read (fill, then the clean read), none.
Alternating rounds. `python e1.py OUT.json`."""
import json, sys, time
import torch
import torch.nn.functional as F
from smemkit.runtime.timing import _time
from smemkit.offload.gemv import split_linear
from smemkit.offload.pinned import SplitWeight

torch.manual_seed(0)
l2 = torch.cuda.get_device_properties(0).L2_cache_size
fill_buf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
read_buf = torch.zeros(2 * l2 // 4, dtype=torch.float32, device="cuda")
acc = torch.empty((), dtype=torch.float32, device="cuda")


def f_fill():
    fill_buf.fill_(1)


def f_read():
    read_buf.sum()


def f_fill_read():
    f_fill(); f_read()


MODES = {"fill": f_fill, "read": f_read, "fill_read": f_fill_read, "none": None}
R_STAR = 0.0128
ops = {}
keep = []
for n, k in ((4096, 14336), (28672, 8192)):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * 0.02
    w2 = torch.empty_like(w)
    keep += [w, w2]
    for b in (1, 64):
        x = torch.randn(b, k, device="cuda", dtype=torch.bfloat16)
        keep.append(x)
        ops[f"{n}x{k}/b{b}/cublas"] = (lambda x=x, w=w: F.linear(x, w))
    x1 = torch.randn(1, k, device="cuda", dtype=torch.bfloat16)
    keep.append(x1)
    for label, r in (("r0", 0.0), ("rstar", R_STAR), ("r0.05", 0.05)):
        sw = SplitWeight(w, r)
        keep.append(sw)
        ops[f"{n}x{k}/b1/smemkit_{label}"] = (lambda x=x1, sw=sw, r=r: split_linear(x, sw, path="kernel" if r else "auto"))
        if r == 0:
            ops[f"{n}x{k}/b1/smemkit_kernel_r0"] = (lambda x=x1, sw=sw: split_linear(x, sw, path="kernel"))
    ops[f"{n}x{k}/read_sum"] = (lambda w=w: torch.sum(w, dtype=torch.float32))
    ops[f"{n}x{k}/d2d_copy"] = (lambda w=w, w2=w2: w2.copy_(w))
small = torch.randn(8 << 20, device="cuda")  # 32 MB: fits in L2
ops["32MB/read_sum"] = (lambda s=small: torch.sum(s))

res = {"l2_bytes": l2, "rounds": []}
for rnd in range(3):
    row = {}
    for name, fn in ops.items():
        for mode in (MODES if rnd % 2 == 0 else list(reversed(MODES))):
            try:
                t = _time(fn, 3, 20, True, MODES[mode], 10.0, False)
                row[f"{name}|{mode}"] = t.median_ms * 1e3
            except Exception as e:
                row[f"{name}|{mode}"] = f"{type(e).__name__}: {e}"[:200]
    res["rounds"].append(row)
    print("round", rnd, "done", flush=True)
json.dump(res, open(sys.argv[1], "w"), indent=1)
import statistics
print(f"{'op':42s} " + " ".join(f"{m:>10s}" for m in MODES))
for name in ops:
    vals = []
    for m in MODES:
        v = [r[f"{name}|{m}"] for r in res["rounds"] if isinstance(r[f"{name}|{m}"], float)]
        vals.append(statistics.median(v) if v else float("nan"))
    print(f"{name:42s} " + " ".join(f"{v:10.1f}" for v in vals))
