#!/usr/bin/env bash
# Eleventh session, call 1: the rewritten persisting-L2 test alone, the full GPU suite, then l2left.py.
set -u
O=$OUT/x1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-x1 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 60 python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider > $O/runtime-tests.log 2>&1; echo rt rc=$?; tail -n 1 $O/runtime-tests.log
timeout 240 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
timeout 200 python3 .branches/s11/l2left.py $O/l2left.json > $O/l2left.log 2>&1; echo l2left rc=$? t=$(( $(date +%s)-S )); tail -30 $O/l2left.log
cp .branches/s11/l2left.py .branches/s11/x1.sh $O/
