#!/usr/bin/env bash
# Twelfth session, call 2: A/B round 2 (ab2.py): plain loads, holding v, plain stores, launch bounds for the regs / reread kernels at lars, pearson_bwd 4K and 8K.
set -u
O=$OUT/y2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y2 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 400 python3 .branches/s12/ab2.py --out $O/ab2.json > $O/ab2.log 2>&1; echo ab rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y2.sh .branches/s12/ab2.py $O/
grep -v Warning $O/ab2.log | cut -c1-150 | tail -50
