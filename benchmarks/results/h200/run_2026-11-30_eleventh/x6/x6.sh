#!/usr/bin/env bash
# Eleventh session, call 6: max.NaN / min.NaN A/B (old tree = HEAD 805efcb, alternating processes), then the full GPU suite on the new tree.
set -u
O=$OUT/x6; mkdir -p $O
export PYTHONUNBUFFERED=1
S=$(date +%s)
NEW=$PWD/src OLD=$PWD/.branches/s11/base/src
for i in 1 2; do
  SMEMKIT_CACHE_DIR=/tmp/c-old PYTHONPATH=$OLD timeout 70 python3 .branches/s11/ab3.py --tag old$i --out $O/old$i.json > $O/old$i.log 2>&1; echo old$i rc=$?
  SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$NEW timeout 70 python3 .branches/s11/ab3.py --tag new$i --out $O/new$i.json > $O/new$i.log 2>&1; echo new$i rc=$?
done
echo ab t=$(( $(date +%s)-S ))
SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$NEW timeout 200 python3 -m pytest -q -m gpu tests --junitxml=$O/gpu-tests.xml -p no:cacheprovider > $O/gpu-tests.log 2>&1; echo tests rc=$? t=$(( $(date +%s)-S ))
tail -n 2 $O/gpu-tests.log; grep -E "^(FAILED|ERROR)" $O/gpu-tests.log | head -20
cp .branches/s11/ab3.py .branches/s11/x6.sh $O/
cd $OUT && tar czf x6.tgz x6 && rm -rf x6
paste -d'\n' <(tar xzf x6.tgz -O x6/old1.log) <(tar xzf x6.tgz -O x6/new1.log) <(tar xzf x6.tgz -O x6/old2.log) <(tar xzf x6.tgz -O x6/new2.log) | cut -c1-160
