#!/bin/bash
# s17 call 8: the full GPU suite on the final code
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c8
git log --oneline -1 > $OUT/c8/commit.txt
OUT=$OUT/c8 timeout 560 scripts/gpu-check tests > $OUT/c8/gpu-check.log 2>&1; echo rc $?
tail -5 $OUT/c8/gpu-tests.log
