"""Registers / spills of reread (and reread_l2 per-row) at 512 threads with unroll 1 / 2 and min blocks 3 / 4."""
import smemkit.reduction.codegen as cg
from smemkit.reduction.workloads import BUILTIN
from smemkit.runtime.compiler import compile_module
from smemkit.reduction.codegen import Variant, generate, kernel_name
OVR = {}
_mb, _ur = cg.Variant.min_blocks, cg.Variant.unroll
cg.Variant.min_blocks = property(lambda self: OVR.get("mb", _mb.fget(self)))
cg.Variant.unroll = property(lambda self: OVR.get("ur", _ur.fget(self)))
for name in sorted(BUILTIN):
    spec = BUILTIN[name]
    for v in (Variant("reread", threads=512), Variant("reread", threads=256)):
        row = []
        for ur in (1, 2):
            for mb in ((3, 4) if v.threads == 512 else (6, 8)):
                OVR.clear(); OVR.update(mb=mb, ur=ur)
                m = compile_module(generate(spec, v), kernel_name(spec, v), arch="sm_90a")
                u = m.resources[kernel_name(spec, v)]
                row.append(f"u{ur}mb{mb}:{u.registers}r/{u.spill_store_bytes}s")
        print(f"{name:14s} {v.label:12s} " + " ".join(row), flush=True)
