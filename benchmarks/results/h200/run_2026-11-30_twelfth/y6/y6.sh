#!/usr/bin/env bash
# Twelfth session, call 6: second samples from main for run-to-run spread (not replacing the records): the CREDIT evaluation, and benchmarks/reduction.py for lars and pearson_bwd.
set -u
O=$OUT/y6; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y6 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo eval rc=$? t=$(( $(date +%s)-S ))
timeout 300 python3 benchmarks/reduction.py --workloads lars pearson_bwd --out $O/reduction_lars_pearson.json > $O/reduction.log 2>&1; echo bench rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y6.sh $O/
grep -E "WRONG|right" $O/credit_eval.log | cut -c1-140; grep -A12 '"accuracy"' $O/credit_eval.json | tr -d ' \n'; echo; grep -A30 '"crossover"' $O/credit_eval.json | tr -d ' \n' | cut -c1-600; echo
tail -12 $O/reduction.log | cut -c1-200
