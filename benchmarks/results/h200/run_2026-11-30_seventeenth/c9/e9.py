"""Experiment: is the clean read flush a full eviction? Times after: fill (dirty), read (sum over
2 x L2), read4 (sum over 4 x L2), fill_discard (fill, then discard.global.L2 of every line of the
fill buffer: the L2 is emptied of it without write-back), none. Ops: 117 MB bf16 GEMV (cuBLAS),
32 MB plain read kernel (tests/gpu/kernels/l2_keep_read.cu). Alternating rounds.
`python e9.py OUT.json`."""
import json, statistics, sys
from pathlib import Path
import torch
import torch.nn.functional as F
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import _time

l2 = torch.cuda.get_device_properties(0).L2_cache_size
fill_buf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
r2 = torch.zeros(2 * l2 // 4, device="cuda")
r4 = torch.zeros(4 * l2 // 4, device="cuda")
DISCARD = KernelModule(r'''
extern "C" __global__ void discard_l2(const char* p, long long lines) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < lines; i += (long long)gridDim.x * blockDim.x)
    asm volatile("discard.global.L2 [%0], 128;" :: "l"(p + i * 128) : "memory");
}''', "exp/discard").function("discard_l2", ("ptr", "i64"))
lines = fill_buf.numel() // 128


def fill_discard():
    fill_buf.fill_(1)
    DISCARD.launch(1056, 256, fill_buf, lines)


MODES = {"fill": lambda: fill_buf.fill_(1), "read": lambda: r2.sum(), "read4": lambda: r4.sum(),
         "fill_discard": fill_discard, "none": None}
mod = KernelModule((Path("tests/gpu/kernels/l2_keep_read.cu")).read_text(), "l2_keep_read")
plain = mod.function("read_plain", ("ptr", "i64", "ptr"))
x32 = torch.randn(8 << 20, device="cuda")
sink = torch.zeros(1, device="cuda")
w = torch.randn(4096, 14336, device="cuda", dtype=torch.bfloat16)
xv = torch.randn(1, 14336, device="cuda", dtype=torch.bfloat16)
w470 = torch.randn(28672, 8192, device="cuda", dtype=torch.bfloat16)
xv2 = torch.randn(1, 8192, device="cuda", dtype=torch.bfloat16)
ops = {"gemv_117MB": lambda: F.linear(xv, w), "gemv_470MB": lambda: F.linear(xv2, w470),
       "read_32MB": lambda: plain.launch(132 * 8, 256, x32, x32.numel() // 4, sink)}
res = {"l2": l2, "rounds": []}
for rnd in range(4):
    row = {}
    order = list(MODES) if rnd % 2 == 0 else list(reversed(MODES))
    for name, fn in ops.items():
        for m in order:
            row[f"{name}|{m}"] = _time(fn, 3, 30, True, MODES[m], 10.0, False).median_ms * 1e3
    res["rounds"].append(row)
json.dump(res, open(sys.argv[1], "w"), indent=1)
print(f"{'op':12s} " + " ".join(f"{m:>12s}" for m in MODES) + "  (us, median of 4 rounds)")
for name in ops:
    print(f"{name:12s} " + " ".join(f"{statistics.median(r[f'{name}|{m}'] for r in res['rounds']):12.1f}" for m in MODES))
