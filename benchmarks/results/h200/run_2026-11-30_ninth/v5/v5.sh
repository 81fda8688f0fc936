#!/usr/bin/env bash
# Ninth session, call 5: the re-read kernel without unrolling at full occupancy (4K / 8K).
set -u
O=$OUT/v5; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v5 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
timeout 400 python3 .branches/s9/occ_ab2.py $O/occ_ab2.json > $O/occ_ab2.log 2>&1; echo occ rc=$? t=$(( $(date +%s)-S ))
cp .branches/s9/occ_ab2.py .branches/s9/regcheck2.py .branches/s9/v5.sh $O/
grep -A4 "compile [0-9]" $O/occ_ab2.log | grep -v "^--" | cut -c1-100
