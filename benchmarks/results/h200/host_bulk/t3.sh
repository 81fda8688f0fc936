#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t3; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $O/smi.txt
W="layernorm_bwd quant_int8 lars pearson_bwd softmax_bwd wvar_bwd"
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 200 python3 .branches/host_bulk.py $O/host_bulk.json > $O/host_bulk.log 2>&1; echo bulk rc=$?
timeout 120 python3 .branches/store_ab.py --modes base unroll4 --widths 16384 32768 65536 --out $O/unroll.json --workloads $W > $O/unroll.log 2>&1; echo unroll rc=$?
timeout 240 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$?
tail -n 4 $O/gpu-tests.log
cat $O/host_bulk.log | cut -c1-250
cat $O/unroll.log
cd $OUT && tar czf t3.tgz t3 && rm -rf t3
