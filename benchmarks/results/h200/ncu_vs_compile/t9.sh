#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t9; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src
timeout 200 python3 .branches/occ_ab.py $O/occ_ab.json > $O/occ_ab.log 2>&1; echo rc=$?
tail -n 30 $O/occ_ab.log
cd $OUT && tar czf t9.tgz t9 && rm -rf t9
