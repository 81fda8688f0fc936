#!/usr/bin/env bash
# Fourteenth session call G: the split-attention benchmark from main (61fc37b+docs; timing without the persisting-L2 reset, through offload_ops.timed), as the eighth session ran it.
set -u
O=$OUT/g; mkdir -p $O
export PYTHONUNBUFFERED=1 SMEMKIT_CACHE_DIR=/tmp/c-g PYTHONPATH=$PWD/src
S=$(date +%s)
timeout 250 python3 benchmarks/offload_attention.py --out $O/offload_attention.json --budget-s 140 > $O/offload_attention.log 2>&1; echo att rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/callG.sh $O/
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/g/offload_attention.json"))
recs = d["records"]
R = {(r["batch"], r["context"], str(r["r"]), r["method"]): r for r in recs if "context" in r}
sm = [r for r in recs if r.get("method") == "smemkit"]
print("smemkit <=1.12x:", sum(r["ms_over_ideal"] <= 1.12 for r in sm), "of", len(sm))
z = [k for k in R if k[3] == "smemkit" and k[2] == "0"]
print("r=0 within 5% of hbm:", sum(R[k]["ms"] <= 1.05 * R[(k[0], k[1], "0", "hbm")]["ms"] for k in z if (k[0], k[1], "0", "hbm") in R), "of", len(z))
PY
