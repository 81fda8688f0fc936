#!/usr/bin/env bash
# Eighth session, call 4: the attention ring path: attention + offload GPU tests, then the
# attention benchmark (both paths timed at every split point) and the linear offload benchmark
# (ring refactored into run_ring).
set -u
O=$OUT/v4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v4 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 240 python3 -m pytest -q -m gpu tests/gpu/test_offload_attention_gpu.py tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 4 $O/gpu-tests-offload.log
timeout 200 python3 benchmarks/offload_attention.py --out $O/offload_attention.json --budget-s 170 > $O/offload_attention.log 2>&1; echo att rc=$? t=$(( $(date +%s)-S ))
tail -n 42 $O/offload_attention.log
