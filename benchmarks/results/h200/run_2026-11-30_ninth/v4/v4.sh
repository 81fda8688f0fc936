#!/usr/bin/env bash
# Ninth session, call 4: Triton baseline records again (pearson's per-input means), the CREDIT
# evaluation with the Triton kernel as a dispatch candidate, then (embedded) the dispatch GPU tests.
set -u
O=$OUT/v4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v4 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
cp benchmarks/results/h200/reduction.json $O/reduction.json
timeout 200 python3 benchmarks/reduction.py --out $O/reduction.json --append --methods triton > $O/reduction-triton.log 2>&1; echo red rc=$? t=$(( $(date +%s)-S ))
timeout 200 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines $O/reduction.json > $O/credit_eval.log 2>&1; echo credit rc=$? t=$(( $(date +%s)-S ))
tail -n 22 $O/credit_eval.log
python3 benchmarks/credit_eval.py --embed $O/credit_eval.json > /dev/null && \
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_drop_in_gpu.py tests/gpu/test_reduction_gpu.py -k "drop_in or dispatch or autotune" -p no:cacheprovider > $O/gpu-tests-dispatch.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests-dispatch.log
