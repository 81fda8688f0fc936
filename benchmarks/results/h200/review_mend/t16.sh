#!/usr/bin/env bash
set -u
O=$OUT/s6t16; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_offload_gpu.py tests/gpu/test_offload_attention_gpu.py tests/gpu/test_host_paths_gpu.py tests/gpu/test_runtime_gpu.py -p no:cacheprovider -x > $O/gpu-tests-mend.log 2>&1; echo rc=$?
tail -n 3 $O/gpu-tests-mend.log
cd $OUT && tar czf s6t16.tgz s6t16 && rm -rf s6t16
