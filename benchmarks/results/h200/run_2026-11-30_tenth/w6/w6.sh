#!/usr/bin/env bash
# Tenth session, call 6: the CREDIT evaluation from main again (against w5's reduction.json), then the full GPU suite.
set -u
O=$OUT/w6; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w6 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 250 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -E "WRONG" $O/credit_eval.log; grep -A7 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log
timeout 300 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
cp .branches/s10/w6.sh $O/
