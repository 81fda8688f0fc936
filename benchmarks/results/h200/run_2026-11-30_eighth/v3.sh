#!/usr/bin/env bash
# Eighth session, call 3: offload GPU tests on the new ring (no K pieces), the offload benchmark
# from main, the ring breakdown, and the 8K cluster A/B.
set -u
O=$OUT/v3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 120 python3 -m pytest -q -m gpu tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 1 $O/gpu-tests-offload.log
timeout 200 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo offload rc=$? t=$(( $(date +%s)-S ))
timeout 60 python3 benchmarks/ring_breakdown.py --out $O/ring_breakdown.json > $O/ring_breakdown.log 2>&1; echo bd rc=$? t=$(( $(date +%s)-S ))
timeout 200 python3 .branches/cluster8k_ab.py $O/cluster8k_ab.json > $O/cluster8k_ab.log 2>&1; echo c8k rc=$? t=$(( $(date +%s)-S ))
tail -n 9 $O/ring_breakdown.log
tail -n 8 $O/cluster8k_ab.log
tail -n 1 $O/offload_ops.log
