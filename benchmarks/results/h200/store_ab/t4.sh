#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t4; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $O/smi.txt
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 150 python3 .branches/store_ab.py --modes base nox1 nox_all --widths 16384 32768 65536 --out $O/nox.json --workloads layernorm_bwd softmax_bwd wvar_bwd pearson_bwd > $O/nox.log 2>&1; echo nox rc=$?
cat $O/nox.log
cd $OUT && tar czf t4.tgz t4 && rm -rf t4
