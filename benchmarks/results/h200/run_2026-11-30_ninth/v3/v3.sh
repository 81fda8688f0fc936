#!/usr/bin/env bash
# Ninth session, call 3: the full GPU suite with the triton variant; Triton configs at 4K / 8K.
set -u
O=$OUT/v3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 330 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
timeout 200 python3 .branches/s9/tcfg.py $O/tcfg.json > $O/tcfg.log 2>&1; echo tcfg rc=$? t=$(( $(date +%s)-S ))
cp .branches/s9/tcfg.py $O/; cat $O/tcfg.log | tail -14
