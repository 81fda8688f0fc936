"""Fourteenth session A/B (experiment driver, not shipped): issue 3's non-cluster misses against
torch.compile (lars / pearson_bwd at 4K-8K). torch.compile's kernel reads each first-stage input in
its own loop (w, then g); ours reads all of them in one loop. Knob "split": the first stage's
element loop written once per input, each copy keeping only its input's loads and statistics
(text edit of the generated source); "st": plain stores instead of __stcs. torch.compile timed in
the same rounds; outputs poisoned and checked against float64."""
import argparse, json, re, statistics
import torch
from smemkit.reduction import BUILTIN, reference
from smemkit.reduction.codegen import Variant, parameter_kinds, dynamic_smem_bytes, kernel_name
from smemkit.reduction.kernels import prepare, kernel_source, regs_variant
from smemkit.reduction.eager import EAGER
from smemkit.reduction.reference import output_errors
from smemkit.reduction.workloads import example_inputs
from smemkit.runtime.launch import KernelModule
from smemkit.runtime.timing import time_both_modes

KNOBS = {"base": [], "split": ["split"], "split+st": ["split", "st"], "split+b8": ["split", "b8"]}
GROUPS = {"lars": [("w", [0]), ("g", [1])], "pearson_bwd": [("x", [0]), ("y", [1])]}


def split_stage1(src: str, groups) -> str:
    lines = src.split("\n")
    head = next(i for i, l in enumerate(lines) if l.startswith("  // ---- stage 1"))
    start = next(i for i in range(head, len(lines)) if lines[i].startswith("#pragma unroll"))
    end = next(i for i in range(start, len(lines)) if "= warp_reduce<" in lines[i])
    loop = lines[start:end]
    names = [n for n, _ in groups]
    out = []
    for n, stats in groups:
        others = [o for o in names if o != n]
        drop = re.compile("|".join([rf"\b_b_{o}\b|\b{o}4\b|\b{o}_a\b|const float {o} = " for o in others]
                                   + [rf"\bacc0_{j}\b" for g, js in groups if g != n for j in js]))
        out += [f"  // first-stage loop over {n} only"] + [l for l in loop if not drop.search(l)]
    return "\n".join(lines[:start] + out + lines[end:])


def edit(src: str, knobs, groups) -> str:
    for k in knobs:
        if k == "split":
            src = split_stage1(src, groups)
        elif k == "b8":  # reread_l2: 8 loads in flight per thread in the one-input loops (was 4 per input)
            head = src.index("  // ---- stage 1"); end = src.index("= warp_reduce<", head)
            part = src[head:end]
            for a, b in (("4 * THREADS", "8 * THREADS"), ("[4];", "[8];"), (", 4, THREADS", ", 8, THREADS"),
                         ("_j < 4;", "_j < 8;"), ("issue 4 loads", "issue 8 loads")):
                part = part.replace(a, b)
            src = src[:head] + part + src[end:]
        elif k == "st":
            src = src.replace("using namespace smemkit;", "using namespace smemkit;\n#define __stcs(p, v) (*(p) = (v))", 1)
    return src


def build(spec, v, knobs):
    name = kernel_name(spec, v)
    src = edit(kernel_source(spec, v), knobs, GROUPS[spec.name])
    return src, KernelModule(src, name + "_" + "_".join(knobs or ["base"])).function(name, parameter_kinds(spec))


PLAN = {"lars": [Variant("reread", threads=512), Variant("reread_l2", threads=512)],
        "pearson_bwd": [Variant("reread", threads=512), Variant("reread_l2", threads=512)]}

if __name__ == "__main__":
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--widths", default="4096,8192"); ap.add_argument("--rounds", type=int, default=3); a = ap.parse_args()
    if a.compile_only:
        from smemkit.runtime.compiler import compile_module
        for name, vs in PLAN.items():
            for v in vs:
                for label, ks in [(l, ks) for l, ks in KNOBS.items() if v.kind == "reread_l2" or "b8" not in ks]:
                    n = kernel_name(BUILTIN[name], v)
                    src = edit(kernel_source(BUILTIN[name], v), ks, GROUPS[name])
                    r = compile_module(src, n, arch="sm_90a").resources[n]
                    print(name, v.label, label, r)
        raise SystemExit
    torch._dynamo.config.cache_size_limit = 64
    recs = []
    for name in ("lars", "pearson_bwd"):
        spec = BUILTIN[name]
        for N in [int(x) for x in a.widths.split(",")]:
            M = 4096
            t, s = example_inputs(name, M, N, device="cuda"); want = reference(spec, t, s)
            comp = spec.bytes.compulsory * M * N
            cands = {}
            comp_fn = torch.compile(EAGER[name], dynamic=False)
            cands["compile"] = lambda: comp_fn(t, s)
            rv = regs_variant(N, 256 if N <= 4096 else 512)
            for v in PLAN[name] + [rv]:
                for label, ks in ([(l, ks) for l, ks in KNOBS.items() if v.kind == "reread_l2" or "b8" not in ks] if v.kind != "regs" else [("base", [])]):
                    _, k = build(spec, v, ks); prep = prepare(spec, t, s); smem = dynamic_smem_bytes(spec, v, N)
                    cands[f"{v.label}{'_rows' if v.kind == 'reread_l2' else ''}:{label}"] = (
                        lambda k=k, v=v, prep=prep, smem=smem: (k.launch(M, v.threads, *prep.args, cluster=1, smem=smem, device=0), prep.outputs)[1])
            errs = {}
            for key, fn in cands.items():
                if key != "compile":
                    for o in fn().values():
                        o.fill_(float("nan") if o.is_floating_point() else 77)
                got = fn(); torch.cuda.synchronize()
                errs[key] = output_errors(got, want)
            times = {key: [] for key in cands}
            for rnd in range(a.rounds):
                for key, fn in cands.items():
                    times[key].append(time_both_modes(fn, warmup=5, reps=30).best.median_ms)
            base = statistics.median(times["compile"])
            for key in cands:
                ms = statistics.median(times[key])
                recs.append({"workload": name, "M": M, "N": N, "cand": key, "ms_rounds": times[key], "ms": ms,
                             "tbps": comp / (ms * 1e-3) / 1e12, **errs[key]})
                print(f"{name:12s} {N:6d} {key:28s} {ms*1e3:8.2f} us {recs[-1]['tbps']:.3f} TB/s  vs compile {base/ms:.3f}  "
                      f"err {errs[key].get('rel_err', float('nan')):.1e}  rounds {' '.join(f'{x*1e3:.1f}' for x in times[key])}", flush=True)
            del t, want; torch.cuda.empty_cache()
    json.dump(recs, open(a.out, "w"), indent=1)
