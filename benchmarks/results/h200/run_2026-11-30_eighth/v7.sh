#!/usr/bin/env bash
# Eighth session, call 7: the linear offload benchmark from main with the 15 us ring constant.
set -u
O=$OUT/v7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v7 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 220 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo ops rc=$? t=$(( $(date +%s)-S ))
tail -n 1 $O/offload_ops.log
