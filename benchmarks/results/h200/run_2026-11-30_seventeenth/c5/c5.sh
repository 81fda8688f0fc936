#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c5
timeout 400 python3 .branches/s17/e5.py $OUT/c5/e5.json > $OUT/c5/e5.log 2>&1; echo rc $?
grep -v "r\*_sweep" $OUT/c5/e5.log | tail -30
