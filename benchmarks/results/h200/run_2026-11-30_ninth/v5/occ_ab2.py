"""Ninth session, second A/B: the re-read kernel with its element loop not unrolled (unroll 1:
32 registers, no spills, at 512 threads x 4 CTAs / 256 x 8 / 1024 x 2 per SM: full occupancy, the
shape of the looped Triton kernel that matched torch.compile at lars 4K), at 4K / 8K, against
torch.compile (default) and the current best kernels in the same process. Two rounds in opposite
orders; every output checked against float64."""
import json, sys, time
import torch
import smemkit.reduction.codegen as cg
import smemkit.reduction.kernels as K
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant, generate, kernel_name
from smemkit.reduction.eager import EAGER
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.compiler import compile_module
from smemkit.runtime.timing import time_both_modes

OVR: dict = {}
_orig = cg.Variant.min_blocks
_ur = cg.Variant.unroll
cg.Variant.min_blocks = property(lambda self: OVR.get((self.kind, self.threads), (None, _orig.fget(self)))[1])
cg.Variant.unroll = property(lambda self: OVR.get((self.kind, self.threads), (_ur.fget(self), None))[0])
torch._dynamo.config.cache_size_limit = 64

def variants(N):
    """(variant, [(unroll, min_blocks), ...]); (2, default) is the shipped build."""
    rv = K.regs_variant
    cands = [(Variant("staged"), [(2, 1)]),
             (Variant("reread", threads=512), [(1, 4), (1, 3)]),
             (Variant("reread"), [(1, 8), (1, 6), (2, 2)]),
             (Variant("reread", threads=1024), [(1, 2)]),
             (Variant("reread_l2", threads=512, per_row=True), [(2, 2), (1, 4)])]
    if N == 4096:
        cands.append((rv(N, 256), [(2, 4)]))
    else:
        cands.append((rv(N, 512), [(2, 2)]))
    return cands

def main():
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else sorted(BUILTIN)
    widths = (4096, 8192)
    out = sys.argv[1]
    recs = []
    for name in names:
        spec = BUILTIN[name]
        M = 2048 if name == "layernorm_bwd" else 4096
        comp = torch.compile(EAGER[name], dynamic=False)
        for N in widths:
            tensors, scalars = example_inputs(name, M, N, device="cuda")
            want = reference(spec, tensors, scalars)
            byts = spec.bytes.compulsory * M * N
            cands = [("compile", None, None)]
            for v, pairs in variants(N):
                for ur, mb in pairs:
                    cands.append((f"{v.label}_u{ur}_mb{mb}", v, (ur, mb)))
            for rnd, order in enumerate((cands, cands[::-1])):
                for label, v, mb in order:
                    if v is None:
                        fn = lambda: comp(tensors, scalars)
                        regs = spill = None
                    else:
                        OVR.clear(); OVR[(v.kind, v.threads)] = mb  # (unroll, min_blocks)
                        K.compiled_kernel.cache_clear(); K._RESIDENT.clear()
                        mod = compile_module(generate(spec, v), kernel_name(spec, v))
                        ru = mod.resources[kernel_name(spec, v)]
                        regs, spill = ru.registers, ru.spill_store_bytes
                        prep = K.prepare(spec, tensors, scalars, None)
                        fn = lambda p=prep, v=v: (K.launch(spec, v, p), p.outputs)[1]
                    try:
                        got = fn(); torch.cuda.synchronize()
                    except Exception as e:
                        recs.append({"workload": name, "N": N, "label": label, "round": rnd, "error": str(e)[:200]})
                        continue
                    err = max(relative_error(got[k], w) for k, w in want.items() if got[k].dtype != torch.int8)
                    t = time_both_modes(fn, warmup=5, reps=30).best.median_ms
                    ctas = None
                    if v is not None:
                        ctas = K.ctas_per_sm_at_once(spec, v, M, N, 0)
                    recs.append({"workload": name, "M": M, "N": N, "label": label, "round": rnd, "ms": t,
                                 "tbps": byts / t / 1e9, "rel_err": err, "regs": regs, "spill_b": spill,
                                 "ctas_per_sm": ctas})
            json.dump(recs, open(out, "w"), indent=1)
            # table for this shape: median over rounds
            by = {}
            for r in recs:
                if r["workload"] == name and r["N"] == N and "ms" in r:
                    by.setdefault(r["label"], []).append(r["ms"])
            c = min(by["compile"])
            print(f"{name} N={N}: compile {c*1e3:.1f} us", flush=True)
            for lab, ts in sorted(by.items(), key=lambda kv: min(kv[1])):
                r0 = next(r for r in recs if r["workload"] == name and r["N"] == N and r["label"] == lab)
                print(f"   {lab:28s} {min(ts)*1e3:7.1f} {max(ts)*1e3:7.1f} us  vs compile {c/min(ts):.3f}  "
                      f"regs {r0['regs']} spill {r0['spill_b']} ctas/SM {r0['ctas_per_sm']}", flush=True)
main()
