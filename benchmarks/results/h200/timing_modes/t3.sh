#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 60 python3 .branches/addr_diag.py $O/diag_before.json > $O/diag_before.log 2>&1; echo diag rc=$?
timeout 400 python3 benchmarks/reduction.py --out $O/reduction_part.json --workloads wvar_bwd pearson_bwd softmax_bwd --widths 32768 65536 --methods compile triton cluster > $O/reduction_part.log 2>&1; echo bench rc=$?
timeout 60 python3 .branches/addr_diag.py $O/diag_after.json > $O/diag_after.log 2>&1; echo diag rc=$?
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $O/smi.txt
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/s6t3"
b = json.load(open(O + "/reduction_part.json"))["records"]
for r in b:
    if r["ms"] and r["variant"] in ("cluster", "compile", "triton") and (r["variant"] != "cluster" or r["P"] in (4, 8)):
        print(r["workload"], r["N"], r["variant"], r["P"], round(r["eff_tbps"], 3))
PY
cut -c1-200 $O/diag_before.log; cut -c1-200 $O/diag_after.log
cp .branches/t3.sh $O/
cd $OUT && tar czf s6t3.tgz s6t3 && rm -rf s6t3
