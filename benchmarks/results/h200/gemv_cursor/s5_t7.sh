#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
OUT=$O timeout 240 bash scripts/gpu-check tests > $O/gpu-check-tests.out 2>&1; echo tests rc=$?
tail -n 4 $O/gpu-tests.log
PYTHONPATH=$PWD/src timeout 90 python3 .branches/gemv_ab.py new $O/gemv_new.json > $O/gemv_new.log 2>&1; echo new rc=$?
PYTHONPATH=$PWD/.branches/old/src timeout 90 python3 .branches/gemv_ab.py old $O/gemv_old.json > $O/gemv_old.log 2>&1; echo old rc=$?
OUT=$O timeout 200 bash scripts/gpu-check offload-ops > $O/offload_ops.log 2>&1; echo offload rc=$?
tail -n 3 $O/offload_ops.log
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/s5t7"
old = json.load(open(O + "/gemv_old.json")); new = json.load(open(O + "/gemv_new.json"))
for o, n in zip(old, new):
    print(o["shape"], o["batch"], o["ratio"], round(o["ms"] * 1e3, 1), round(n["ms"] * 1e3, 1), round(n["ms"] / o["ms"], 3))
d = json.load(open(O + "/offload_ops.json"))
recs = [r for r in d["records"] if r["method"] == "smemkit" and r.get("op") != "attention" and r["r"] not in ("0", 0)]
print("offloaded points <= 1.12x ideal:", sum(r["ms_over_ideal"] <= 1.12 for r in recs), "of", len(recs))
PY
cd $OUT && tar czf s5t7.tgz s5t7 && rm -rf s5t7
