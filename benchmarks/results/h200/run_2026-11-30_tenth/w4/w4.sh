#!/usr/bin/env bash
# Tenth session, call 4: the timing's reset of persisting L2 lines: the new GPU test, the same
# measurement without the reset, the bias experiment again, then the CREDIT evaluation.
set -u
O=$OUT/w4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w4 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 60 python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider > $O/runtime-tests.log 2>&1; echo rt rc=$? t=$(( $(date +%s)-S )); tail -n 1 $O/runtime-tests.log
timeout 60 python3 .branches/s10/negcheck.py > $O/negcheck.log 2>&1; echo neg rc=$?; cat $O/negcheck.log
timeout 120 python3 .branches/s10/bias.py $O/bias.json > $O/bias.log 2>&1; echo bias rc=$? t=$(( $(date +%s)-S )); cat $O/bias.log
timeout 300 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
grep -E "WRONG" $O/credit_eval.log; grep -A7 '"accuracy"' $O/credit_eval.log | tr -d '\n '; echo; grep -E "dispatch_vs|\"best\"" $O/credit_eval.log
cp .branches/s10/negcheck.py .branches/s10/w4.sh $O/
