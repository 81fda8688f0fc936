#!/usr/bin/env bash
# Sixteenth session call 8: reduction GPU tests and the reduction benchmark from main (paired reread_t512).
set -u
O=$OUT/c8; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c8
S=$(date +%s)
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_reduction_gpu.py tests/gpu/test_drop_in_gpu.py -p no:cacheprovider > $O/gpu-tests-reduction.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
timeout 420 python3 benchmarks/reduction.py --out $O/reduction.json > $O/reduction.log 2>&1; echo bench rc=$? t=$(( $(date +%s)-S ))
cp .branches/s16/c8.sh $O/
tail -2 $O/gpu-tests-reduction.log
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/c8/reduction.json"))
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
