#!/usr/bin/env bash
# Eighth session, call 5: the attention ring interleaved on the caller's stream, with the
# kernel/ring rule: offload GPU tests, the attention benchmark, the linear offload benchmark.
set -u
O=$OUT/v5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v5 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_offload_attention_gpu.py tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 4 $O/gpu-tests-offload.log
timeout 200 python3 benchmarks/offload_attention.py --out $O/offload_attention.json --budget-s 170 > $O/offload_attention.log 2>&1; echo att rc=$? t=$(( $(date +%s)-S ))
timeout 200 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo ops rc=$? t=$(( $(date +%s)-S ))
tail -n 42 $O/offload_attention.log
tail -n 1 $O/offload_ops.log
