#!/usr/bin/env bash
# Eighth session, call 2: ring A/B (old / new / new without K pieces / cuBLAS / kernel), the ring
# breakdown at batch 512, and the offload GPU tests on the new ring.
set -u
O=$OUT/v2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v2 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 300 python3 .branches/ring_ab.py $O/ring_ab.json > $O/ring_ab.log 2>&1; echo ab rc=$? t=$(( $(date +%s)-S ))
timeout 90 python3 benchmarks/ring_breakdown.py --out $O/ring_breakdown.json > $O/ring_breakdown.log 2>&1; echo bd rc=$? t=$(( $(date +%s)-S ))
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_offload_gpu.py -p no:cacheprovider -x > $O/gpu-tests-offload.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 3 $O/gpu-tests-offload.log
cat $O/ring_breakdown.log | tail -8
tail -n 82 $O/ring_ab.log
