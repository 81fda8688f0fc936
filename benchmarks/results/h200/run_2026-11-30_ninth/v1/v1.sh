#!/usr/bin/env bash
# Ninth session, call 1: offload GPU tests (the 15 us rule), then the 4K/8K occupancy A/B.
set -u
O=$OUT/v1; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-v1 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $O/smi.txt
S=$(date +%s)
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_offload_gpu.py -p no:cacheprovider > $O/gpu-tests-offload.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests-offload.log
timeout 330 python3 .branches/s9/occ_ab.py $O/occ_ab.json > $O/occ_ab.log 2>&1; echo occ rc=$? t=$(( $(date +%s)-S ))
cp .branches/s9/occ_ab.py $O/
grep -v "^ \{3\}" $O/occ_ab.log | tail -3; cat $O/occ_ab.log | grep -A4 "compile [0-9]" | head -80
