#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s5t10; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s5 PYTHONPATH=$PWD/src:$PWD/benchmarks
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_host_paths_gpu.py tests/gpu/test_offload_gpu.py -k "host_paths or congestion or bad_arguments or tma or bulk" -p no:cacheprovider > $O/gpu-tests-host-paths-review.log 2>&1; echo tests rc=$?
tail -n 4 $O/gpu-tests-host-paths-review.log
timeout 120 python3 benchmarks/host_paths.py --methods bulk,tma_multicast --out $O/host_paths_review.json > $O/host_paths_review.log 2>&1; echo hp rc=$?
tail -n 11 $O/host_paths_review.log
cd $OUT && tar czf s5t10.tgz s5t10 && rm -rf s5t10
