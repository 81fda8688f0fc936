"""Report of benchmarks/results/h200/credit_eval.json: tables and figures of the paper, on our GPU.

    python benchmarks/report_credit.py [credit_eval.json] [reduction.json] [out_dir]

Writes docs/results/credit_eval.md, fig3_speedup.png (cluster kernel over the best baseline
against N, per workload: paper Fig. 3) and fig4_crossover.png (predicted and measured crossover
width per workload: paper Fig. 4). Table V (model accuracy) uses the model as shipped on the
embedded H200 table and the paper's own convention, side by side.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from smemkit.hw.profile import builtin_profiles
from smemkit.reduction.cost_model import crossover, evaluate
from smemkit.reduction.tables import h100_credit, h200_smemkit

ROOT = Path(__file__).resolve().parent.parent


def accuracy(points, profile, paper_convention: bool, ablation: bool = False) -> tuple[int, int, dict]:
    correct, verdicts = 0, {}
    for p in points:
        measured = (dataclasses.replace(p.measured, baseline_variant="reread") if paper_convention
                    else p.measured)
        sizes = sorted(measured.control_excess_ms)
        v = evaluate(p.shape, profile, measured, sizes=sizes, ablation=ablation)
        verdicts[(p.workload, p.shape.N)] = v
        correct += v.profitable == (min(p.cluster_ms.values()) < p.measured.baseline_ms)
    return correct, len(points), verdicts


def crossovers(points, verdicts) -> dict:
    out = {}
    for name in sorted({p.workload for p in points}):
        rs = sorted((p for p in points if p.workload == name), key=lambda p: p.shape.N)
        measured = next((p.shape.N for p in rs if min(p.cluster_ms.values()) < p.measured.baseline_ms),
                        None)
        predicted = crossover({N: v for (w, N), v in verdicts.items() if w == name})
        out[name] = (predicted, measured)
    return out


def geomeans(ev: dict, reduction: dict) -> dict[str, float]:
    """Geomean over workloads at 64K of baseline time / best cluster time; 'best' is the fastest
    of torch.compile (both modes), Triton and non-cluster CUDA."""
    import math

    base = {(r["workload"], r["N"], r["variant"]): r["ms"] for r in reduction["records"] if r["ms"]}
    ratios: dict[str, list[float]] = {m: [] for m in ("compile", "compile_max", "triton", "cuda", "best")}
    for r in ev["records"]:
        if r["N"] != 65536:
            continue
        times = {m: base.get((r["workload"], 65536, m)) for m in ("compile", "compile_max", "triton")}
        times["cuda"] = r["baseline_ms"]
        times["best"] = min(t for t in times.values() if t)
        for m, t in times.items():
            if t:
                ratios[m].append(t / r["best_cluster_ms"])
    return {m: math.exp(sum(map(math.log, v)) / len(v)) for m, v in ratios.items() if v}


def figures(ev: dict, reduction: dict, cross: dict, out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    base = {(r["workload"], r["N"], r["variant"]): r["ms"] for r in reduction["records"] if r["ms"]}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name in sorted({r["workload"] for r in ev["records"]}):
        rs = sorted((r for r in ev["records"] if r["workload"] == name), key=lambda r: r["N"])
        speedups = []
        for r in rs:
            best = min(v for v in (base.get((name, r["N"], "compile")), base.get((name, r["N"], "triton")),
                                   r["baseline_ms"]) if v)
            speedups.append(best / r["best_cluster_ms"])
        ax.plot([r["N"] for r in rs], speedups, marker="o", label=name)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("row width N")
    ax.set_ylabel("speedup of the cluster kernel\nover the best baseline")
    ax.set_title("H200: cluster kernel vs best of torch.compile, Triton, non-cluster CUDA")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "fig3_speedup.png", dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 3.6))
    names = sorted(cross)
    xs = range(len(names))
    ax.scatter(xs, [cross[n][1] or 131072 for n in names], marker="o", s=80, label="measured")
    ax.scatter(xs, [cross[n][0] or 131072 for n in names], marker="x", s=80, label="predicted")
    ax.set_xticks(list(xs), names, rotation=20, fontsize=8)
    ax.set_yscale("log", base=2)
    ax.set_ylabel("crossover width N*")
    ax.set_title("H200: predicted vs measured crossover (against non-cluster CUDA)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "fig4_crossover.png", dpi=120)
    plt.close(fig)
    return ["fig3_speedup.png", "fig4_crossover.png"]


def main() -> None:
    ev_path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "benchmarks/results/h200/credit_eval.json"
    red_path = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "benchmarks/results/h200/reduction.json"
    out_dir = Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT / "docs/results"
    ev, reduction = json.loads(ev_path.read_text()), json.loads(red_path.read_text())
    profiles = builtin_profiles()
    h200, h100 = h200_smemkit(), h100_credit()
    ours = accuracy(h200, profiles["h200_sxm"], paper_convention=False)
    paper = accuracy(h200, profiles["h200_sxm"], paper_convention=True)
    ablation = accuracy(h200, profiles["h200_sxm"], paper_convention=False, ablation=True)
    h100_ours = accuracy(h100, profiles["h100_sxm"], paper_convention=True)
    cross = crossovers(h200, ours[2])
    pngs = figures(ev, reduction, cross, out_dir)
    s = ev["summary"]
    lines = [
        "# The CREDIT evaluation on the H200",
        "",
        "Made by `benchmarks/report_credit.py` from `benchmarks/results/h200/credit_eval.json` "
        "(`benchmarks/credit_eval.py`) and `reduction.json` (torch.compile and Triton baselines, a "
        "separate run on the same GPU type).",
        "",
        "## Table V: profitability accuracy (cluster kernel beats the best non-cluster CUDA kernel?)",
        "",
        "| model | H200 (ours, 30 points) | H100 (CREDIT's kernels and data) |",
        "| --- | --- | --- |",
        f"| Eq. 3-9, T_save from the baseline kernel's own re-reads (shipped) | {ours[0]}/{ours[1]} | "
        f"- |",
        f"| Eq. 3-9, paper convention (T_save as if the baseline re-reads) | {paper[0]}/{paper[1]} | "
        f"{h100_ours[0]}/{h100_ours[1]} (paper: 28/30) |",
        f"| ablation: peak bandwidth + serialized staging | {ablation[0]}/{ablation[1]} | - |",
        "",
        "The shipped model's rule (a one-CTA staged baseline reads every element once, so nothing is",
        "saved) was made after seeing these H200 data; it is validated on the same data, not on fresh",
        "measurements. Its remaining errors are all at staged-baseline points: where the staged kernel",
        "holds one CTA per SM (128-196 KB of shared memory: N = 16K, quant_int8 at 32K) the cluster",
        "kernel wins by occupancy, which Eq. 3-9 do not model; layernorm_bwd at 8K is a 1 % win.",
        "",
        "## Fig. 4: crossover width N* (first width where the cluster kernel wins)",
        "",
        "| workload | predicted | measured |",
        "| --- | --- | --- |",
        *[f"| {n} | {p} | {m} |" for n, (p, m) in cross.items()],
        "",
        "## Table IV: geomean speedup of the best cluster kernel at N = 64K",
        "",
        "| over | speedup |",
        "| --- | --- |",
        *[f"| {k} | {v:.3f}x |" for k, v in geomeans(ev, reduction).items()],
        "",
        f"Smallest ratio best-baseline / dispatched over the 30 points, dispatching by the model "
        f"as run in credit_eval (paper convention): {s.get('dispatch_vs_best_min', float('nan')):.3f}.",
        "",
        *[f"![{p}]({p})" for p in pngs],
    ]
    (out_dir / "credit_eval.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out_dir / 'credit_eval.md'} and {', '.join(pngs)}")


if __name__ == "__main__":
    main()
