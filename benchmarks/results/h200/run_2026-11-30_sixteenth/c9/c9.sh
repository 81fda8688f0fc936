#!/usr/bin/env bash
# Sixteenth session call 9: the full GPU suite and the reduction benchmark from main (final code).
set -u
O=$OUT/c9; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c9
S=$(date +%s)
timeout 210 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
timeout 360 python3 benchmarks/reduction.py --out $O/reduction.json > $O/reduction.log 2>&1; echo bench rc=$? t=$(( $(date +%s)-S ))
cp .branches/s16/c9.sh $O/
tail -3 $O/gpu-tests.log
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/c9/reduction.json"))
R = d["records"]
nc = ("staged", "reread", "regs", "reread_t512", "reread_l2", "reread_l2_t512", "reread_l2_rows", "reread_l2_t512_rows", "regs_t256", "regs_t512")
pts = sorted({(r["workload"], r["N"]) for r in R})
ok = 0
for w, n in pts:
    rs = [r for r in R if r["workload"] == w and r["N"] == n]
    comp = [r["ms"] for r in rs if r["variant"] == "compile"][0]
    cands = [r for r in rs if r["variant"] not in ("eager", "compile", "compile_max", "triton", "cluster", "cluster_pf") and r["ms"]]
    best = min(cands, key=lambda r: r["ms"])
    t512 = [r["ms"] for r in rs if r["variant"] == "reread_t512"]
    ok += best["ms"] <= comp
    print(f"{w:14s} {n:6d} best {best['variant']:22s} {best['ms']/comp:.4f}x compile; reread_t512 {t512[0]/comp if t512 else float('nan'):.4f}x")
print("non-cluster >= compile:", ok, "of", len(pts))
PY
