#!/usr/bin/env bash
# Twelfth session, call 3: benchmarks/reduction.py from main (regs kernels holding every input with plain loads/stores; max.NaN; per-input barriers) = issue 3's record.
set -u
O=$OUT/y3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 570 python3 benchmarks/reduction.py --out $O/reduction.json > $O/reduction-bench.log 2>&1; echo bench rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y3.sh $O/; tail -32 $O/reduction-bench.log | cut -c1-250
