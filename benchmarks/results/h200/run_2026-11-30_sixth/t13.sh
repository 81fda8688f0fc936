#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t13; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
PYTHONPATH=$PWD/src timeout 60 python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider > $O/gpu-tests-runtime.log 2>&1; echo tests rc=$?
tail -n 2 $O/gpu-tests-runtime.log
OUT=$O PYTHONPATH=$PWD/src timeout 540 bash scripts/gpu-check reduction-bench credit-eval > $O/run.log 2>&1; echo rc=$?
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> $O/smi.txt
grep -E "best|accuracy|geomean|dispatch" $O/run.log | tail -n 40 | cut -c1-200
cp .branches/t13.sh $O/
cd $OUT && tar czf s6t13.tgz s6t13 && rm -rf s6t13
