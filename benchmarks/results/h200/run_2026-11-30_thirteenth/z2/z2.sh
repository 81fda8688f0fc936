#!/usr/bin/env bash
# Thirteenth session (after z1): direct-access host-rows GEMM + carved-out cuBLAS against the ring at batch 512, r* / r_hide (issue 5). Prototype in .branches/s13/direct_gemm.py (not shipped).
set -u
O=$OUT/z2; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-z2 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 400 python3 .branches/s13/z2.py --out $O/z2.json > $O/z2.log 2>&1; echo z2 rc=$? t=$(( $(date +%s)-S ))
cp .branches/s13/z2.sh .branches/s13/z2.py .branches/s13/direct_gemm.py $O/
grep -v Warning $O/z2.log | cut -c1-400 | tail -20
