#!/bin/bash
# s17 call 16: the offload benchmark from main with the per-point host-copy ideal and the summary
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c16
OUT=$OUT/c16 timeout 400 scripts/gpu-check offload-ops > $OUT/c16/offload_ops.log 2>&1; echo rc $?
tail -3 $OUT/c16/offload_ops.log
