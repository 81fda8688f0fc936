#!/usr/bin/env bash
# Tenth session, call 1: the full GPU suite on main (the ninth session's last changes had not run
# on the GPU), then the regs_v4 T_B bias experiment with an SM clock / power trace.
set -u
O=$OUT/w1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-w1 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > $O/smi.txt 2>&1
timeout 330 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $O/clock_trace.csv 2>&1 &
SMI=$!
date +%s.%N > $O/bias_t0.txt
timeout 200 python3 .branches/s10/bias.py $O/bias.json > $O/bias.log 2>&1; echo bias rc=$? t=$(( $(date +%s)-S ))
kill $SMI
cp .branches/s10/bias.py .branches/s10/w1.sh $O/; cat $O/bias.log | tail -8
