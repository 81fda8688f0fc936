#!/usr/bin/env bash
# Fourteenth session call E: the timing tests on the GPU, the offload benchmark from main without the persisting-L2 reset (full, one command), then a2 (boundary alignment).
set -u
O=$OUT/e; mkdir -p $O
export PYTHONUNBUFFERED=1 SMEMKIT_CACHE_DIR=/tmp/c-e PYTHONPATH=$PWD/src
S=$(date +%s)
python3 -m pytest -q -p no:cacheprovider tests/gpu/test_runtime_gpu.py tests/cpu/test_timing.py -k "timing or reset or persisting or warm" > $O/tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S )); tail -2 $O/tests.log
timeout 300 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo ops rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/callE.sh $O/
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/e/offload_ops.json"))
recs = d["records"]
sm = [r for r in recs if r["method"] == "smemkit" and r["r_actual"] > 0]
print("<=1.12x", sum(r["ms_over_ideal"] <= 1.12 for r in sm), "of", len(sm), "B_h", round(d["links"]["B_h_gbps"], 1))
R = {(tuple(r["shape"]), r["batch"], r["r"], r["method"]): r for r in recs}
z = [(k, r) for k, r in R.items() if k[3] == "smemkit" and k[2] == "0"]
print("r=0 within 5% of cublas", sum(r["ms"] <= 1.05 * R[(k[0], k[1], "0", "cublas_hbm")]["ms"] for k, r in z), "of", len(z))
b = [(k, r) for k, r in R.items() if k[3] == "smemkit" and k[1] == 512 and 0 < r["r_actual"] <= r["r_hide"] + 1e-9]
print("batch512 r<=r_hide within 5% all-HBM", sum(r["ms"] <= 1.05 * R[(k[0], 512, k[2], "cublas_hbm")]["ms"] for k, r in b), "of", len(b))
PY
timeout 200 bash .branches/s14/a2.sh | tail -40
