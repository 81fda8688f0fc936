#!/usr/bin/env bash
# Tenth session, call 8: NVRTC --no-cache checked (diag), then the CREDIT evaluation and the full GPU suite again.
set -u
O=$OUT/w8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w8 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 30 python3 .branches/s10/diag.py > $O/diag.log 2>&1; echo diag rc=$?; head -c 3000 $O/diag.log
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -E "WRONG" $O/credit_eval.log; grep -A7 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log; tail -3 $O/credit_eval.log | cut -c1-300
timeout 200 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
cp .branches/s10/w8.sh .branches/s10/diag.py $O/
