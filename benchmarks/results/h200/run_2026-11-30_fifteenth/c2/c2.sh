#!/usr/bin/env bash
# Fifteenth session call 2: b3 (issue 3 lars 4K/8K regs micro-variants against torch.compile).
set -u
O=$OUT/c2; mkdir -p $O
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src
SMEMKIT_CACHE_DIR=/tmp/c-b3 timeout 300 python3 .branches/s15/b3.py --out $O/b3.json > $O/b3.log 2>&1; echo b3 rc=$?
tar czf $O/drivers.tgz .branches/s15/c2.sh .branches/s15/b3.py
grep -v Warning $O/b3.log | grep -v "^check" | tail -24
grep "^check" $O/b3.log | awk '{print $3, $5, $7}' | sort -k2 -g | tail -3
