#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src:$PWD/benchmarks
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > $O/smi.txt
timeout 150 python3 -m pytest -q -x tests/gpu/test_host_paths_gpu.py -p no:cacheprovider > $O/gpu-tests-host-paths.log 2>&1; echo tests rc=$?
tail -n 15 $O/gpu-tests-host-paths.log
timeout 150 python3 benchmarks/host_paths.py --methods load,bulk --out $O/host_paths_bulk.json > $O/host_paths_bulk.log 2>&1; echo bulk rc=$?
timeout 200 python3 benchmarks/host_paths.py --methods tma,tma_multicast --out $O/host_paths_tma.json > $O/host_paths_tma.log 2>&1; echo tma rc=$?
timeout 150 python3 .branches/ncu_ln64k.py $O/ncu_ln64k.json > $O/ncu_ln64k.log 2>&1; echo ncu rc=$?
tail -n 14 $O/host_paths_bulk.log; tail -n 14 $O/host_paths_tma.log
grep -v "^==PROF==" $O/ncu_ln64k.log | cut -c1-1500 | tail -n 8
cd $OUT && tar czf s5t2.tgz s5t2 && rm -rf s5t2
