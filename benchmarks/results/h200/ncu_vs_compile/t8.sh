#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t8; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src:$PWD/benchmarks
timeout 280 python3 .branches/ncu_vs_compile.py $O/ncu_vs_compile.json > $O/ncu_vs_compile.log 2>&1; echo rc=$?
grep -v "^==PROF==" $O/ncu_vs_compile.log | cut -c1-900 | tail -n 30
cd $OUT && tar czf t8.tgz t8 && rm -rf t8
