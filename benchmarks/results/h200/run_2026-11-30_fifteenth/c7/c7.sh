#!/usr/bin/env bash
# Fifteenth session call 7: rst.py, modes never / every / once alternating, two processes each.
set -u
O=$OUT/c7; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/c-c7
i=0
for rep in 1 2; do for m in never every once; do
  i=$((i+1)); timeout 120 python3 .branches/s15/rst.py --mode $m --out $O/rst_${i}_$m.json 2>&1 | grep -v Warn
done; done
cd $O && tar czf rst.tgz *.json && rm -f *.json; cd - > /dev/null
tar czf $O/drivers.tgz .branches/s15/c7.sh .branches/s15/rst.py
