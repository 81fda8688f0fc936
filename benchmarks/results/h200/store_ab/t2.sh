#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t2; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $O/smi.txt
W="layernorm_bwd quant_int8 lars pearson_bwd softmax_bwd wvar_bwd"
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src SMEMKIT_TRITON_CONFIGS="4096:8,4096:16,8192:16"
timeout 400 python3 .branches/store_ab.py --triton --out $O/store.json --workloads $W > $O/store.log 2>&1; echo ab rc=$?
cut -c1-190 $O/store.log | grep -v "^\s*$" | tail -n 80
cd $OUT && tar czf t2.tgz t2 && rm -rf t2
