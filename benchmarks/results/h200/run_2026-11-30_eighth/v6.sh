#!/usr/bin/env bash
# Eighth session, call 6: the review mend of the ring (try/finally join, explicit copies join,
# chunk GEMM via _gemm, r = 0.75 ring tests, slow-GEMM-stream test): offload + attention GPU
# tests; then the attention benchmark from main with the warm-up.
set -u
O=$OUT/v6; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v6 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_offload_gpu.py tests/gpu/test_offload_attention_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 3 $O/gpu-tests-offload.log
timeout 170 python3 benchmarks/offload_attention.py --out $O/offload_attention.json --budget-s 140 > $O/offload_attention.log 2>&1; echo att rc=$? t=$(( $(date +%s)-S ))
tail -n 42 $O/offload_attention.log
