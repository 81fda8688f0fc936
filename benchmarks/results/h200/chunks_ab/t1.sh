#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $O/smi.txt
W="layernorm_bwd quant_int8 lars pearson_bwd softmax_bwd wvar_bwd"
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 330 python3 .branches/chunk_ab.py --out $O/chunks.json --workloads $W --widths 4096 8192 16384 32768 65536 > $O/chunks.log 2>&1; echo ab rc=$?
timeout 200 python3 -m pytest -q -x -m gpu tests/gpu/test_reduction_gpu.py -p no:cacheprovider -k "c2 or c4 or c8 or persistent" > $O/gpu-tests-chunks.log 2>&1; echo tests rc=$?
tail -n 3 $O/gpu-tests-chunks.log
cat $O/chunks.log | cut -c1-200
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
