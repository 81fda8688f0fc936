#!/usr/bin/env bash
# Thirteenth session, call 5: z4 in the reverse order (main first, then b7aaa3f): was its uniform 3 % ring slowdown on main the code or the order?
set -u
O=$OUT/z5; mkdir -p $O
export PYTHONUNBUFFERED=1
S=$(date +%s)
SMEMKIT_CACHE_DIR=/tmp/c-z5b PYTHONPATH=$PWD/src timeout 250 python3 benchmarks/offload_ops.py --out $O/offload_ops_main.json > $O/offload_ops_main.log 2>&1; echo main rc=$? t=$(( $(date +%s)-S ))
SMEMKIT_CACHE_DIR=/tmp/c-z5a PYTHONPATH=$PWD/.branches/s13/b7/src timeout 250 python3 .branches/s13/b7/benchmarks/offload_ops.py --out $O/offload_ops_b7aaa3f.json > $O/offload_ops_b7aaa3f.log 2>&1; echo old rc=$? t=$(( $(date +%s)-S ))
cp .branches/s13/z5.sh $O/
nvidia-smi -q | grep -iE "link|gen|width" | head -12 > $O/pcie.txt
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/z5"
for tag in ("b7aaa3f", "main"):
    d = json.load(open(f"{O}/offload_ops_{tag}.json"))
    sm = [r for r in d["records"] if r["method"] == "smemkit" and r["r_actual"] > 0]
    print(tag, "B_h", round(d["links"]["B_h_gbps"], 1), "<=1.12x:", sum(r["ms_over_ideal"] <= 1.12 for r in sm), "/", len(sm),
          "median x ideal", sorted(r["ms_over_ideal"] for r in sm)[len(sm)//2])
PY
cat $O/pcie.txt
