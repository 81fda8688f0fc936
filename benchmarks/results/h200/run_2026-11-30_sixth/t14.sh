#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t14; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name,uuid --format=csv > $O/smi.txt
timeout 400 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1; echo rc=$?
grep -E "WRONG|right" $O/credit_eval.log | grep -c right
python3 -c "import json;d=json.load(open('$O/credit_eval.json'));print(json.dumps(d['summary'])[:700])"
cp .branches/t14.sh $O/
cd $OUT && tar czf s6t14.tgz s6t14 && rm -rf s6t14
