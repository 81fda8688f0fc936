"""Nineteenth session driver (experiment, not shipped): issue 5's batch-512 bar. The shipped ring
runs the HBM rows' GEMM as one cuBLAS call; a landed chunk's GEMM (side stream) then gets SMs only
near its end. Variant: the HBM rows' GEMM cut into pieces on the caller's stream, so a landed
chunk's GEMM can take SMs at a piece boundary. Per point, rotated rounds of: cuBLAS on the dense
weight, the shipped ring, and pieces variants (2 pieces with the cut at 25/50/75 % of the HBM rows,
3 and 4 equal pieces; chunk GEMMs on the ring's stream or on a high-priority one). Timed as
offload_ops times (graph, read flush, no persisting-L2 reset), SM clock after each timing. Outputs
checked against float64 (NaN-poisoned) first. Also: the copy of a host part alone against the copy
followed by a dependent 1-element op on another stream (the least a copy-then-compute path adds)."""
import argparse, json, statistics, sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from offload_ops import measure_links, random_weight, sm_clock_mhz  # noqa: E402
from smemkit.offload.gemv import split_linear  # noqa: E402
from smemkit.offload.pinned import SplitWeight  # noqa: E402
from smemkit.offload.ring_gemm import RING_SLOTS, host_chunks, host_ring, linear_into  # noqa: E402
from smemkit.runtime.timing import time_gpu  # noqa: E402

F_FLOPS = 790e12
HI = {}


def hi_stream():
    if "s" not in HI:
        HI["s"] = torch.cuda.Stream(priority=-5)  # clamped to the device's highest
    return HI["s"]


def cuts_for(n_hbm, fracs, align=256):
    cuts = [0]
    for f in fracs:
        c = int(round(n_hbm * f / align)) * align
        if cuts[-1] < c < n_hbm:
            cuts.append(c)
    return cuts + [n_hbm]


def ring_pieces(x2, sw, y2, fracs, prio):
    """The shipped ring_linear with the HBM GEMM cut at fracs of the HBM rows."""
    n_hbm, host_rows, k = sw.n_hbm, sw.host_rows, x2.shape[1]
    main = torch.cuda.current_stream()
    chunks, chunk = host_chunks(host_rows, k, x2.element_size())
    ring = host_ring(x2.device, x2.dtype, main)
    gs = hi_stream() if prio else ring.gemms
    cuts = cuts_for(n_hbm, fracs)
    ring.copies.wait_stream(main)
    gs.wait_stream(main)
    for j in range(chunks):
        h0, h1 = j * chunk, min(host_rows, (j + 1) * chunk)
        slot = j % RING_SLOTS
        with torch.cuda.stream(ring.copies):
            if j >= RING_SLOTS:
                ring.copies.wait_event(ring.free[slot])
            ring.slot(slot, h1 - h0, k).copy_(sw.host[h0:h1], non_blocking=True)
            ring.ready[slot].record(ring.copies)
        if j == 0:
            for a, b in zip(cuts, cuts[1:]):
                linear_into(x2, sw.hbm[a:b], None, y2[:, a:b])
        with torch.cuda.stream(gs):
            gs.wait_event(ring.ready[slot])
            linear_into(x2, ring.slot(slot, h1 - h0, k), None, y2[:, n_hbm + h0:n_hbm + h1])
            ring.free[slot].record(gs)
    main.wait_stream(ring.copies)
    main.wait_stream(gs)


def t(fn):
    ms = time_gpu(fn, warmup=3, reps=20, graph=True, flush_l2=True, flush_kind="read",
                  reset_persisting_l2=False).median_ms
    return ms, sm_clock_mhz()


VARIANTS = {"p2_25": [0.25], "p2_50": [0.5], "p2_75": [0.75], "p3": [1 / 3, 2 / 3], "p4": [0.25, 0.5, 0.75]}


def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--out"); ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    links = measure_links(10)
    b_h = links["B_h_bytes_per_s"]
    recs, tails = [], []
    for n, k in ((4096, 14336), (14336, 4096), (8192, 28672), (28672, 8192)):
        w = random_weight(n, k)
        x = torch.randn(512, k, device="cuda", dtype=torch.bfloat16)
        ref = x.double() @ w.double().T
        for label, r in (("r*", links["r_star"]), ("r_hide", 512 * b_h / F_FLOPS), ("0.05", 0.05)):
            sw = SplitWeight(w, r)
            y = torch.empty(512, n, dtype=torch.bfloat16, device="cuda")
            cands = {"cublas": lambda: F.linear(x, w), "ring": lambda: split_linear(x, sw)}
            for name, fr in VARIANTS.items():
                for prio in (0, 1):
                    cands[f"{name}{'_hi' if prio else ''}"] = (lambda fr=fr, prio=prio: ring_pieces(x, sw, y, fr, prio))
            errs = {}
            for c, fn in cands.items():
                y.fill_(float("nan"))
                out = fn()
                out = y if out is None else out
                torch.cuda.synchronize()
                errs[c] = float((out.double() - ref).norm() / ref.norm())
            times = {c: [] for c in cands}
            names = list(cands)
            for rnd in range(a.rounds):
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                if rnd % 2:
                    order = order[::-1]
                for c in order:
                    times[c].append(t(cands[c]))
            med = {c: statistics.median(ms for ms, _ in v) for c, v in times.items()}
            rec = {"shape": [n, k], "batch": 512, "r": label, "r_actual": sw.ratio, "host_rows": sw.host_rows,
                   "chunks": host_chunks(sw.host_rows, k, 2)[0], "rel_err": errs, "median_ms": med,
                   "over_cublas": {c: med[c] / med["cublas"] for c in med}, "rounds": times}
            recs.append(rec)
            best = min((c for c in med if c not in ("cublas",)), key=med.get)
            print(f"{n}x{k} {label:6s} cublas {med['cublas']*1e3:6.1f} ring {med['ring']*1e3:6.1f} "
                  f"({med['ring']/med['cublas']:.3f}) best {best} {med[best]*1e3:6.1f} "
                  f"({med[best]/med['cublas']:.3f}) maxerr {max(errs.values()):.1e}", flush=True)
            # the least a copy-then-compute path adds: copy alone vs copy + a dependent op elsewhere
            if label != "r_hide":
                dst = torch.empty_like(sw.host, device="cuda")
                s2 = torch.cuda.Stream()
                flag = torch.zeros(1, device="cuda")
                ev = torch.cuda.Event()

                def copy_only():
                    dst.copy_(sw.host, non_blocking=True)

                def copy_dep():
                    main = torch.cuda.current_stream()
                    s2.wait_stream(main)
                    with torch.cuda.stream(s2):
                        dst.copy_(sw.host, non_blocking=True)
                        ev.record(s2)
                    main.wait_event(ev)
                    flag.add_(1)

                def copy_side():
                    main = torch.cuda.current_stream()
                    s2.wait_stream(main)
                    with torch.cuda.stream(s2):
                        dst.copy_(sw.host, non_blocking=True)
                    main.wait_stream(s2)
                ct = {nm: [] for nm in ("copy", "copy_side", "copy_dep")}
                for rnd in range(3):
                    for nm, fn in (("copy", copy_only), ("copy_side", copy_side), ("copy_dep", copy_dep)):
                        ct[nm].append(t(fn)[0])
                tm = {nm: statistics.median(v) for nm, v in ct.items()}
                tails.append({"shape": [n, k], "r": label, "host_bytes": sw.host.numel() * 2, "median_ms": tm,
                              "rounds": ct})
                print(f"   host {sw.host.numel()*2/1e6:6.2f} MB copy {tm['copy']*1e3:6.1f} side {tm['copy_side']*1e3:6.1f} "
                      f"+dep {tm['copy_dep']*1e3:6.1f} us", flush=True)
                del dst
            sw.free()
        del w, x, ref; torch.cuda.empty_cache()
    json.dump({"links": links, "records": recs, "tails": tails}, open(a.out, "w"), indent=1)
    print("\nwithin 5 % of cuBLAS at r*/r_hide:")
    for c in recs[0]["median_ms"]:
        if c == "cublas":
            continue
        sel = [r for r in recs if r["r"] in ("r*", "r_hide")]
        print(f"  {c:10s} {sum(r['over_cublas'][c] <= 1.05 for r in sel)} of {len(sel)}  "
              + " ".join(f"{r['over_cublas'][c]:.3f}" for r in recs))


if __name__ == "__main__":
    main()
