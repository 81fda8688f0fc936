#!/bin/bash
# s17 call 15: the copy engine alone on each benchmark point's host part
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c15
timeout 200 python3 .branches/s17/e15.py $OUT/c15/e15.json > $OUT/c15/e15.log 2>&1; echo rc $?
tail -22 $OUT/c15/e15.log
