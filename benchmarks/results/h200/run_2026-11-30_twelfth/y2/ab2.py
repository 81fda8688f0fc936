"""Twelfth session A/B round 2 (experiment driver, not shipped): after y1 (regs kernels 5 % faster
with plain __ldg than with __ldcs), knobs as edits of the generated text: st = plain stores for
__stcs; ld = __ldg for last-use (__ldcs) loads; hv = lars regs also holds v (loaded with w, g; no L2
prefetch); p1 = plain __ldg for first-pass loads (no evict_last policy); lbK = __launch_bounds__
minimum K. torch.compile timed in the same rounds; outputs poisoned, then checked against float64."""
import argparse, json, re, statistics
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant, parameter_kinds, dynamic_smem_bytes, kernel_name
from smemkit.reduction.kernels import prepare, kernel_source, regs_variant
from smemkit.reduction.eager import EAGER
from smemkit.reduction.reference import relative_error
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.launch import KernelModule

PLAIN = """
__device__ __forceinline__ float4 load_plain(const float* __restrict__ src, long long v, const Slice& s, u64) {
  if (v >= s.full0 && v < s.full0 + s.nfull) return __ldg(reinterpret_cast<const float4*>(src) + v);
  return load_vector<false>(src, v, s, 0ull);
}
"""


def edit(src: str, knobs: list[str]) -> str:
    for k in knobs:
        if k == "st":
            src = src.replace("using namespace smemkit;", "using namespace smemkit;\n#define __stcs(p, v) (*(p) = (v))", 1)
        elif k == "ld":
            src = src.replace("#include <smemkit/reduce_reuse.cuh>", "#define __ldcs(p) __ldg(p)\n#include <smemkit/reduce_reuse.cuh>", 1)
        elif k == "p1":
            src = src.replace("using namespace smemkit;", "using namespace smemkit;" + PLAIN, 1).replace("load_vector<false>(p_", "load_plain(p_")
        elif k == "hv":
            n0 = len(src)
            src = src.replace("  prefetch_full_vectors_l2(p_v, _s);  // thread 0 issues it\n", "")
            src = src.replace("  float4 r_g[VREGS];\n", "  float4 r_g[VREGS];\n  float4 r_v[VREGS];\n")
            line = re.search(r"    r_g\[_j\] = .*\n", src).group(0)
            src = src.replace(line, line + line.replace("r_g", "r_v").replace("p_g", "p_v"))
            src = src.replace("const float4 v4 = load_vector<true>(p_v, _v, _s, _l2_keep);", "const float4 v4 = r_v[_j];")
            assert "r_v[_j] = " in src and "= r_v[_j];" in src and "prefetch_full" not in src, n0
        elif k.startswith("lb"):
            src = re.sub(r"__launch_bounds__\(THREADS, \d+\)", f"__launch_bounds__(THREADS, {k[2:]})", src, count=1)
    return src


def V(label: str, N: int) -> Variant:
    if label.startswith("regs_t"):
        return regs_variant(N, int(label[6:]))
    return {"reread_t512": Variant("reread", threads=512), "staged": Variant("staged")}[label]


PLAN = {
    ("lars", 4096): ["reread_t512:", "reread_t512:p1", "reread_t512:p1+st", "regs_t512:ld", "regs_t512:ld+hv",
                     "regs_t512:ld+hv+st", "regs_t512:ld+hv+lb3", "regs_t256:ld", "regs_t256:ld+hv", "regs_t256:ld+hv+st"],
    ("pearson_bwd", 4096): ["staged:", "regs_t256:ld", "regs_t256:ld+st", "regs_t256:ld+st+lb3", "regs_t512:ld",
                            "regs_t512:ld+st", "reread_t512:p1", "reread_t512:p1+st+lb4"],
    ("lars", 8192): ["reread_t512:", "regs_t512:", "regs_t512:ld", "regs_t512:ld+hv", "regs_t512:ld+hv+st"],
    ("pearson_bwd", 8192): ["staged:", "regs_t512:", "regs_t512:ld", "regs_t512:ld+st"],
}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--compile-only", action="store_true"); a = ap.parse_args()
    if a.compile_only:
        from smemkit.runtime.compiler import compile_module
        for (name, N), cands in PLAN.items():
            for c in cands:
                lab, ks = c.split(":"); v = V(lab, N); n = kernel_name(BUILTIN[name], v)
                print(name, N, c, compile_module(edit(kernel_source(BUILTIN[name], v), [k for k in ks.split("+") if k]), n, arch="sm_90a").resources[n])
        raise SystemExit
    from smemkit.runtime.timing import time_both_modes
    torch._dynamo.config.cache_size_limit = 64
    recs = []
    for (name, N), plan in PLAN.items():
        spec = BUILTIN[name]; M = 4096
        t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
        comp = spec.bytes.compulsory * M * N
        comp_fn = torch.compile(EAGER[name], dynamic=False)
        cands = {"compile": lambda: comp_fn(t, s)}
        for c in plan:
            lab, ks = c.split(":"); v = V(lab, N); n = kernel_name(spec, v)
            k = KernelModule(edit(kernel_source(spec, v), [x for x in ks.split("+") if x]), f"{n}_{ks}").function(n, parameter_kinds(spec))
            prep = prepare(spec, t, s); smem = dynamic_smem_bytes(spec, v, N)
            cands[f"{v.label}:{ks or 'base'}"] = (lambda k=k, v=v, prep=prep, smem=smem: (k.launch(M, v.threads, *prep.args, cluster=1, smem=smem, device=0), prep.outputs)[1])
        errs = {}
        for key, fn in cands.items():
            if key != "compile":
                for o in fn().values():
                    o.fill_(float("nan"))
            got = fn(); torch.cuda.synchronize()
            errs[key] = max(relative_error(got[o], w) for o, w in want.items())
        times = {key: [] for key in cands}
        for rnd in range(3):
            for key, fn in cands.items():
                times[key].append(time_both_modes(fn, warmup=5, reps=30).best.median_ms)
        base = statistics.median(times["compile"])
        for key in cands:
            ms = statistics.median(times[key])
            recs.append({"workload": name, "M": M, "N": N, "cand": key, "ms_rounds": times[key], "ms": ms, "tbps": comp / (ms * 1e-3) / 1e12, "rel_err": errs[key]})
            print(f"{name:12s} {N:5d} {key:22s} {ms*1e3:8.2f} us {recs[-1]['tbps']:.3f} TB/s  vs compile {base/ms:.3f}  err {errs[key]:.1e}  rounds {' '.join(f'{x*1e3:.1f}' for x in times[key])}", flush=True)
        del t, want; torch.cuda.empty_cache()
    json.dump(recs, open(a.out, "w"), indent=1)
