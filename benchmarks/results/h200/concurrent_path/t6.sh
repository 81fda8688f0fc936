#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t6; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 170 python3 -m pytest -q -m gpu tests/gpu/test_offload_gpu.py -p no:cacheprovider --junitxml=$O/gpu-tests-offload.xml > $O/gpu-tests-offload.log 2>&1; echo tests rc=$?
tail -n 6 $O/gpu-tests-offload.log
timeout 330 python3 benchmarks/offload_ops.py --out $O/offload_ops.json --profile-out $O/h200_profile_congestion.json --budget-s 250 > $O/offload_ops.log 2>&1; echo bench rc=$?
tail -n 40 $O/offload_ops.log | cut -c1-160
cd $OUT && tar czf t6.tgz t6 && rm -rf t6
