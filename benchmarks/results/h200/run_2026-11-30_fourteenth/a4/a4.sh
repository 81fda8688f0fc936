#!/usr/bin/env bash
# Fourteenth session: A/B of the first stage split per input (torch.compile's loop structure) in the re-read kernels at lars / pearson_bwd 4K-8K, torch.compile in the same rounds (a4.py).
set -u
O=$OUT/a4; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-a4 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt 2>&1
timeout 260 python3 .branches/s14/a4.py --out $O/a4.json > $O/a4.log 2>&1; echo a4 rc=$? t=$(( $(date +%s)-S ))
cp .branches/s14/a4.sh .branches/s14/a4.py $O/
grep -v Warning $O/a4.log | cut -c1-170 | tail -40
