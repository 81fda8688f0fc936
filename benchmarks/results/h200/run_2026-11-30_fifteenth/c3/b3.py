"""Fifteenth session driver (experiment, not shipped): lars 4K / 8K, micro-variants of the regs
kernel against torch.compile, in rotated rounds (as b2.py). Edits of the generated source:
  onebar  - one barrier for the block reduction: every warp sums the warps' partials by shuffles
            (a different, fixed order); valid with one row per CTA (the per-row grid)
  order   - the held loads issued input by input (all of w, then g, then v) instead of interleaved
  ldplain - held loads as plain ld.global (not the .nc path); ldna: ld.global.nc.L1::no_allocate
  occK    - dynamic shared memory padding so that only K CTAs fit per SM (fewer rows in flight)"""
import argparse, json, re, statistics, sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from offload_ops import sm_clock_mhz  # noqa: E402
from smemkit.reduction import BUILTIN, reference, run  # noqa: E402
from smemkit.reduction.codegen import Variant, generate, kernel_name, parameter_kinds  # noqa: E402
from smemkit.reduction.eager import EAGER  # noqa: E402
from smemkit.reduction.kernels import prepare  # noqa: E402
from smemkit.reduction.reference import output_errors  # noqa: E402
from smemkit.reduction.workloads import example_inputs  # noqa: E402
from smemkit.runtime.launch import KernelModule  # noqa: E402
from smemkit.runtime.timing import time_both_modes  # noqa: E402

SPEC = BUILTIN["lars"]
LOADERS = {
    "ldplain": "ld.global.v4.f32",
    "ldna": "ld.global.nc.L1::no_allocate.v4.f32",
}


def onebar(src):
    start = src.index("  __syncthreads();\n  if (threadIdx.x < 2) {")
    end = src.index("  const float wn = ")
    new = ("  __syncthreads();  // every warp sums the warps' partials itself: no second barrier\n"
           "  float sum_w2 = warp_reduce<OpSum>(_lane < NWARPS ? red[_lane * QMAX + 0] : OpSum::identity());\n"
           "  float sum_g2 = warp_reduce<OpSum>(_lane < NWARPS ? red[_lane * QMAX + 1] : OpSum::identity());\n")
    return src[:start] + new + src[end:]


def order(src):
    m = re.search(r"#pragma unroll\n  for \(int _j = 0; _j < VREGS; \+\+_j\) \{\n"
                  r"    const int _i = threadIdx.x \+ _j \* THREADS;\n((?:    r_\w+\[_j\] = .*\n){3})  \}\n", src)
    assert m, "held-load loop not found"
    loops = "".join("#pragma unroll\n  for (int _j = 0; _j < VREGS; ++_j) {\n"
                    "    const int _i = threadIdx.x + _j * THREADS;\n" + line + "\n  }\n"
                    for line in m.group(1).rstrip("\n").split("\n"))
    return src[:m.start()] + loops + src[m.end():]


def loader(kind):
    def edit(src):
        fn = (f"__device__ __forceinline__ float4 load_held(const float* __restrict__ src, long long v, const Slice& s) {{\n"
              f"  if (v >= s.full0 && v < s.full0 + s.nfull) {{\n    float4 r;\n"
              f"    asm(\"{LOADERS[kind]} {{%0, %1, %2, %3}}, [%4];\" : \"=f\"(r.x), \"=f\"(r.y), \"=f\"(r.z), \"=f\"(r.w)"
              f" : \"l\"(reinterpret_cast<const float4*>(src) + v));\n    return r;\n  }}\n"
              f"  return load_partial_vector(src, v, s);\n}}\n")
        src = src.replace("using namespace smemkit;\n", "using namespace smemkit;\n" + fn, 1)
        return src.replace("load_vector_once(", "load_held(")
    return edit


EDITS = {"onebar": onebar, "order": order, "ldplain": loader("ldplain"), "ldna": loader("ldna")}


def custom(variant, M, N, tensors, scalars, edits=(), per_sm=None):
    src = generate(SPEC, variant)
    for e in edits:
        src = EDITS[e](src)
    name = kernel_name(SPEC, variant)
    kernel = KernelModule(src, name).function(name, parameter_kinds(SPEC))
    prepared = prepare(SPEC, tensors, scalars)
    smem = 0 if per_sm is None else (228 * 1024) // per_sm - 1024 - 2048  # 1 KB reserved per CTA
    resident = kernel.max_active_ctas(variant.threads, smem, 0)

    def call():
        kernel.launch(M, variant.threads, *prepared.args, smem=smem, device=0)
        return prepared.outputs
    return call, prepared.outputs, resident


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    torch._dynamo.config.cache_size_limit = 64
    compiled = torch.compile(EAGER["lars"], dynamic=False)
    result = {"records": [], "resident": {}}
    for N, threads in ((4096, 256), (8192, 512)):
        M = 4096
        tensors, scalars = example_inputs("lars", M, N, device="cuda")
        want = reference(SPEC, tensors, scalars)
        ship = "regs_t256" if N == 4096 else "regs_t512"
        cands = {"compile": (lambda: compiled(tensors, scalars), None),
                 ship: (lambda: run(SPEC, tensors, scalars, variant=ship), None)}
        if N == 8192:
            cands["reread_l2_t512_rows"] = (lambda: run(SPEC, tensors, scalars, variant="reread_l2_t512_rows"), None)
        v = Variant("regs", threads=threads, vregs=4)
        trials = [("onebar",), ("order",), ("ldplain",), ("ldna",), ("onebar", "order"), ("onebar", "ldna")]
        occ = [(), ("onebar",)]
        for edits in trials:
            call, outs, R = custom(v, M, N, tensors, scalars, edits)
            cands["+".join(edits)] = (call, outs)
        for per_sm in ((3, 2) if N == 4096 else (1,)):
            for edits in occ:
                call, outs, R = custom(v, M, N, tensors, scalars, edits, per_sm)
                label = "+".join((*edits, f"occ{per_sm}"))
                result["resident"][f"{label}@{N}"] = R
                cands[label] = (call, outs)
        checks = {}
        for c, (fn, outs) in cands.items():
            if outs is not None:
                for t in outs.values():
                    t.fill_(float("nan"))
            got = fn(); torch.cuda.synchronize()
            first = {k: t.clone() for k, t in got.items()}
            got2 = fn(); torch.cuda.synchronize()
            same = all(torch.equal(first[k], got2[k]) for k in first)
            err = output_errors(first, want)["rel_err"]
            checks[c] = (err, same)
            print(f"check N={N} {c:28s} rel_err {err:.2e} bitwise {same}", flush=True)
        names = list(cands)
        times = {c: [] for c in names}
        for rnd in range(a.rounds):
            order_ = names[rnd % len(names):] + names[:rnd % len(names)]
            if rnd % 2:
                order_ = order_[::-1]
            for c in order_:
                b = time_both_modes(cands[c][0], warmup=5, reps=30)
                times[c].append((b.best.median_ms, b.mode, sm_clock_mhz()))
        comp = statistics.median(t[0] for t in times["compile"])
        for c in names:
            med = statistics.median(t[0] for t in times[c])
            per_round = [t[0] / tc[0] for t, tc in zip(times[c], times["compile"])]
            result["records"].append({"N": N, "M": M, "cand": c, "ms": med, "vs_compile": med / comp,
                                      "rel_err": checks[c][0], "bitwise": checks[c][1],
                                      "per_round_vs_compile": per_round, "rounds": times[c]})
        del tensors, want; torch.cuda.empty_cache()
    json.dump(result, open(a.out, "w"), indent=1)
    print("resident", result["resident"])
    for r in result["records"]:
        print(f"N={r['N']:5d} {r['cand']:24s} {r['ms']*1e3:7.2f} us  x{r['vs_compile']:.4f} "
              f"rounds {' '.join(f'{q:.3f}' for q in r['per_round_vs_compile'])} err {r['rel_err']:.1e} {r['bitwise']}")


if __name__ == "__main__":
    main()
