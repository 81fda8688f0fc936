#!/usr/bin/env bash
# Twelfth session, call 1: A/B of store / last-use load / launch-bound knobs of the non-cluster kernels at lars and pearson_bwd 4K against torch.compile (issue 3's misses).
set -u
O=$OUT/y1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-y1 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 400 python3 .branches/s12/ab_st.py --out $O/ab_st.json > $O/ab_st.log 2>&1; echo ab rc=$? t=$(( $(date +%s)-S ))
cp .branches/s12/y1.sh .branches/s12/ab_st.py $O/
grep -v Warning $O/ab_st.log | cut -c1-150 | tail -50
