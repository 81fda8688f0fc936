#!/usr/bin/env bash
# Fourteenth session call H: mm(out=) against F.linear at batch 512, rotated order (a7.py).
set -u
O=$OUT/a7; mkdir -p $O
export PYTHONUNBUFFERED=1 SMEMKIT_CACHE_DIR=/tmp/c-a7 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $O/smi_before.txt 2>&1
timeout 150 python3 .branches/s14/a7.py --out $O/a7.json > $O/a7.log 2>&1; echo a7 rc=$?
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > $O/smi_after.txt 2>&1
cp .branches/s14/a7.sh .branches/s14/a7.py $O/
grep -v Warning $O/a7.log | tail -40; cat $O/smi_before.txt $O/smi_after.txt
