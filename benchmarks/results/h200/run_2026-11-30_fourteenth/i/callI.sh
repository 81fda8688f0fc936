#!/usr/bin/env bash
# Fourteenth session call I: the offload benchmark from main with cuBLAS timed at every point and the SM clock recorded (one command).
set -u
O=$OUT/i; mkdir -p $O
export PYTHONUNBUFFERED=1 SMEMKIT_CACHE_DIR=/tmp/c-i PYTHONPATH=$PWD/src
S=$(date +%s)
timeout 300 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo ops rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/callI.sh $O/
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/i/offload_ops.json"))
recs = d["records"]
R = {(tuple(r["shape"]), r["batch"], r["r"], r["method"]): r for r in recs}
sm = [r for r in recs if r["method"] == "smemkit" and r["r_actual"] > 0]
print("<=1.12x", sum(r["ms_over_ideal"] <= 1.12 for r in sm), "of", len(sm), "B_h", round(d["links"]["B_h_gbps"], 1), d["status"], round(d["elapsed_s"]))
z = [k for k in R if k[3] == "smemkit" and k[2] == "0"]
print("r=0 within 5% of same-point cublas", sum(R[k]["ms"] <= 1.05 * R[(k[0], k[1], "0", "cublas_hbm")]["ms"] for k in z), "of", len(z))
for k in sorted(k for k in R if k[3] == "smemkit" and k[1] == 512 and k[2] in ("r*", "r_hide")):
    c = R[(k[0], 512, k[2], "cublas_hbm")]; c0 = R[(k[0], 512, "0", "cublas_hbm")]
    print(k[0], k[2], f"ring {R[k]['ms']*1e3:.1f} cublas_here {c['ms']*1e3:.1f} ({R[k]['ms']/c['ms']:.3f}) cublas_r0 {c0['ms']*1e3:.1f} mhz {R[k].get('sm_mhz')} {c.get('sm_mhz')}")
PY
