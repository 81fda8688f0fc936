#!/usr/bin/env bash
# Ninth session, call 9: the CREDIT evaluation from main with the head-to-head measured winner.
set -u
O=$OUT/v9; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v9 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 235 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -E "WRONG" $O/credit_eval.log; grep -A7 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log
