#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t13; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5
nvidia-smi --query-gpu=name,uuid --format=csv > $O/smi.txt
OUT=$O timeout 250 bash scripts/gpu-check tests > $O/gpu-check-tests.out 2>&1; echo tests rc=$?
tail -n 2 $O/gpu-tests.log
OUT=$O timeout 220 bash scripts/gpu-check offload-ops > $O/offload_ops.out 2>&1; echo offload rc=$?
tail -n 2 $O/offload_ops.out
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/s5t13"
d = json.load(open(O + "/offload_ops.json"))
recs = [r for r in d["records"] if r["method"] == "smemkit" and r.get("op") != "attention" and str(r["r"]) != "0"]
print("offloaded points <= 1.12x ideal:", sum(r["ms_over_ideal"] <= 1.12 for r in recs), "of", len(recs), d.get("status"))
PY
cd $OUT && tar czf s5t13.tgz s5t13 && rm -rf s5t13
