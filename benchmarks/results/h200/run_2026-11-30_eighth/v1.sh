#!/usr/bin/env bash
# Eighth session, call 1: full GPU suite on main, fresh credit_eval (limit 3), offload-ops with warm-up.
set -u
O=$OUT/v1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v1 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $O/smi.txt
S=$(date +%s)
timeout 300 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log
timeout 120 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
timeout 170 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo offload rc=$? t=$(( $(date +%s)-S ))
grep -i "accuracy\|geomean\|dispatch" $O/credit_eval.log | tail -5
tail -n 3 $O/offload_ops.log
