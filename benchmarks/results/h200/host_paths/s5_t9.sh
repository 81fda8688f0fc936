#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t9; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_host_paths_gpu.py tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-host-paths-offload.log 2>&1; echo tests rc=$?
tail -n 3 $O/gpu-tests-host-paths-offload.log
OUT=$O timeout 200 bash scripts/gpu-check host-paths > $O/host_paths.log 2>&1; echo hp rc=$?
tail -n 14 $O/host_paths.log
cd $OUT && tar czf s5t9.tgz s5t9 && rm -rf s5t9
