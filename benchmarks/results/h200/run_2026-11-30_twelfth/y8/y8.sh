#!/usr/bin/env bash
# Twelfth session, call 8: a fresh CREDIT evaluation from main (the row-resident unit rule, made after y4 / y6, tested here) and the full GPU suite.
set -u
O=$OUT/y8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y8 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo eval rc=$? t=$(( $(date +%s)-S ))
timeout 220 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y8.sh $O/
grep -E "WRONG" $O/credit_eval.log | cut -c1-140; grep -A12 '"accuracy"' $O/credit_eval.json | tr -d ' \n'; echo; grep -A30 '"crossover"' $O/credit_eval.json | tr -d ' \n' | cut -c1-700; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.json
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
