#!/usr/bin/env bash
# Thirteenth session, call 3: split-K direct-access host-rows GEMM concurrent with cuBLAS (z3.py)
set -u
O=$OUT/z3; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-z3 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 540 python3 .branches/s13/z3.py --out $O/z3.json > $O/z3.log 2>&1; echo z3 rc=$? t=$(( $(date +%s)-S ))
cp .branches/s13/z3.sh .branches/s13/z3.py .branches/s13/direct_gemm.py $O/
grep -v Warning $O/z3.log | cut -c1-400 | tail -20
