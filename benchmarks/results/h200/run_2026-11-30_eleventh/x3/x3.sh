#!/usr/bin/env bash
# Eleventh session, call 3: the reduction benchmark from main with per-input staging barriers.
set -u
O=$OUT/x3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-x3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
git log --oneline -1 > $O/commit.txt 2>&1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 560 python3 benchmarks/reduction.py --out $O/reduction.json > $O/reduction-bench.log 2>&1; echo bench rc=$? t=$(( $(date +%s)-S ))
cp .branches/s11/x3.sh $O/; tail -34 $O/reduction-bench.log | cut -c1-200
