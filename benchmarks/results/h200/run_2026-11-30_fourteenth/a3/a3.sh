#!/usr/bin/env bash
# Fourteenth session, call 3: a third CREDIT evaluation from main (the first with the int8 code check of the cluster kernels; the second with the launch-timed head to head).
set -u
O=$OUT/a3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-a3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 230 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo eval rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/a3.sh $O/
grep -E "WRONG" $O/credit_eval.log | cut -c1-140; grep -A12 '"accuracy"' $O/credit_eval.json | tr -d ' \n'; echo; grep -A30 '"crossover"' $O/credit_eval.json | tr -d ' \n' | cut -c1-700; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.json
grep -o '"cluster_rel_err": [^,]*' $O/credit_eval.json | sort -t: -k2 -g | tail -2
