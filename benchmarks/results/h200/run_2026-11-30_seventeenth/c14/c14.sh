#!/bin/bash
# s17 call 14: the copy engine alone on host parts of the benchmark's sizes
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c14
timeout 200 python3 .branches/s17/e14.py $OUT/c14/e14.json > $OUT/c14/e14.log 2>&1; echo rc $?
tail -12 $OUT/c14/e14.log
