#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t7; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 100 python3 .branches/conc_probe.py $O/conc_probe.json > $O/conc_probe.log 2>&1; echo probe rc=$?
cat $O/conc_probe.log
timeout 200 python3 benchmarks/offload_ops.py --out $O/offload_ops.json --profile-out $O/h200_profile_congestion.json --budget-s 150 > $O/offload_ops.log 2>&1; echo bench rc=$?
tail -n 3 $O/offload_ops.log | cut -c1-160
cd $OUT && tar czf t7.tgz t7 && rm -rf t7
