#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t12; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5
nvidia-smi --query-gpu=name,uuid --format=csv > $O/smi.txt
PYTHONPATH=$PWD/src:$PWD/benchmarks timeout 150 python3 -m pytest -q -x tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload-mbar.log 2>&1; echo tests rc=$?
tail -n 3 $O/gpu-tests-offload-mbar.log
export GEMV_AB_RATIOS=0,0.0125,0.05
PYTHONPATH=$PWD/src timeout 90 python3 .branches/gemv_ab.py mbar $O/gemv_mbar.json > $O/gemv_mbar.log 2>&1; echo new rc=$?
PYTHONPATH=$PWD/.branches/old/src timeout 90 python3 .branches/gemv_ab.py cursor $O/gemv_cursor.json > $O/gemv_cursor.log 2>&1; echo old rc=$?
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/s5t12"
old = json.load(open(O + "/gemv_cursor.json")); new = json.load(open(O + "/gemv_mbar.json"))
for o, n in zip(old, new):
    print(o["shape"], o["batch"], o["ratio"], round(o["ms"] * 1e3, 1), round(n["ms"] * 1e3, 1), round(n["ms"] / o["ms"], 3), round(o["cublas_ms"] * 1e3, 1))
PY
cd $OUT && tar czf s5t12.tgz s5t12 && rm -rf s5t12
