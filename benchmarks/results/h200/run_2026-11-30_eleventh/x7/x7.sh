#!/usr/bin/env bash
# Eleventh session, call 7: the CREDIT evaluation from main with max.NaN (baselines torch.compile/Triton: reduction.json of x3).
set -u
O=$OUT/x7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-x7 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -E "WRONG" $O/credit_eval.log; grep -A7 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log
cp .branches/s11/x7.sh $O/
