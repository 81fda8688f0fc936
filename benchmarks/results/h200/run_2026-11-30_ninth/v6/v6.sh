#!/usr/bin/env bash
# Ninth session, call 6: reread_t512 records in reduction.json, the CREDIT evaluation with it in
# T_B's candidates (and the Triton dispatch candidate), then, embedded, the full GPU suite.
set -u
O=$OUT/v6; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v6 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
cp benchmarks/results/h200/reduction.json $O/reduction.json
timeout 120 python3 benchmarks/reduction.py --out $O/reduction.json --append --methods reread_t512 > $O/reduction-reread_t512.log 2>&1; echo red rc=$? t=$(( $(date +%s)-S ))
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines $O/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -A3 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log
python3 benchmarks/credit_eval.py --embed $O/credit_eval.json > /dev/null && \
timeout 240 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
