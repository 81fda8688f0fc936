#!/usr/bin/env bash
# Twelfth session, call 5: A/B round 3 (ab3.py): plain stores in the cluster kernels and the non-cluster baselines at 8K, 16K, 64K.
set -u
O=$OUT/y5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y5 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 400 python3 .branches/s12/ab3.py --out $O/ab3.json > $O/ab3.log 2>&1; echo ab rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y5.sh .branches/s12/ab3.py $O/
grep -v Warning $O/ab3.log | cut -c1-260 | tail -50
