#!/usr/bin/env bash
# Tenth session, call 5: the reduction benchmark from main (07469e0) with the persisting-L2 reset.
set -u
O=$OUT/w5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w5 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 545 python3 benchmarks/reduction.py --out $O/reduction.json > $O/reduction-bench.log 2>&1; echo bench rc=$? t=$(( $(date +%s)-S ))
python3 -c "import json;d=json.load(open('$O/reduction.json'));print(len(d['records']),'records', sorted({(r['workload']) for r in d['records']}))"
cp .branches/s10/w5.sh $O/; tail -32 $O/reduction-bench.log | cut -c1-200
