#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $O/smi.txt
W="layernorm_bwd quant_int8 lars pearson_bwd softmax_bwd wvar_bwd"
export SMEMKIT_CACHE_DIR=/tmp/c-new
PYTHONPATH=$PWD/src timeout 260 python3 .branches/exp_variants.py --tag new --extra --out $O/new.json --workloads $W --widths 16384 32768 65536 > $O/new.log 2>&1; echo new rc=$?
export SMEMKIT_CACHE_DIR=/tmp/c-old
PYTHONPATH=$PWD/.branches/base/src timeout 120 python3 .branches/exp_variants.py --tag old --out $O/old.json --workloads $W --widths 16384 32768 65536 > $O/old.log 2>&1; echo old rc=$?
export SMEMKIT_CACHE_DIR=/tmp/c-new
PYTHONPATH=$PWD/src timeout 150 python3 -m pytest -q -x -m gpu tests/gpu/test_reduction_gpu.py -p no:cacheprovider > $O/gpu-tests-reduction.log 2>&1; echo tests rc=$?
tail -n 3 $O/gpu-tests-reduction.log
paste <(cat $O/new.log) <(cat $O/old.log) | cut -c1-150
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
