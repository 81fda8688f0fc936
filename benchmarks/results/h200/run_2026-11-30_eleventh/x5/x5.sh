#!/usr/bin/env bash
# Eleventh session, call 5: the CREDIT evaluation again from main with the replay share (an evaluation the model change was not made on), then the full GPU suite.
set -u
O=$OUT/x5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-x5 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
git log --oneline -1 > $O/commit.txt 2>&1
timeout 230 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -E "WRONG" $O/credit_eval.log; grep -A7 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log; tail -3 $O/credit_eval.log | cut -c1-300
timeout 250 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
cp .branches/s11/x5.sh $O/; ls $O
