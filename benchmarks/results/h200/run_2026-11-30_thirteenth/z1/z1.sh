#!/usr/bin/env bash
# Thirteenth session, call 1: the full GPU suite on main (regs_t256 tests and the regs kernels without the unused createpolicy have not run on the GPU), then the offload benchmark from main (it predates the persisting-L2 reset).
set -u
O=$OUT/z1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-z1 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 220 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
timeout 340 python3 benchmarks/offload_ops.py --out $O/offload_ops.json > $O/offload_ops.log 2>&1; echo offload rc=$? t=$(( $(date +%s)-S ))
cp .branches/s13/z1.sh $O/
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
tail -25 $O/offload_ops.log | cut -c1-200
