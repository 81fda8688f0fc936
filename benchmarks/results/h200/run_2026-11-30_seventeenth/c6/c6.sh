#!/bin/bash
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c6
timeout 420 python3 .branches/s17/e6.py $OUT/c6/e6.json > $OUT/c6/e6.log 2>&1; echo rc $?
tail -45 $OUT/c6/e6.log
