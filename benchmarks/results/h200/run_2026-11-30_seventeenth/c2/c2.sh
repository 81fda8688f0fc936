#!/bin/bash
# s17 call 2: flush GPU tests, then offload-ops, offload attention and credit-eval from main
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c2
git log --oneline -1 > $OUT/c2/commit.txt
python3 -m pytest -q -m gpu tests/gpu/test_runtime_gpu.py -p no:cacheprovider > $OUT/c2/runtime-tests.log 2>&1; echo "runtime tests rc $?"; tail -2 $OUT/c2/runtime-tests.log
python3 - <<'PY' 2>&1 | tee $OUT/c2/flush_ratios.log
import sys; sys.path.insert(0, "tests/gpu")
from test_runtime_gpu import flush_ratios
for _ in range(3): print(flush_ratios())
PY
OUT=$OUT/c2 scripts/gpu-check offload-ops > $OUT/c2/offload_ops.log 2>&1; echo "offload-ops rc $?"
python3 benchmarks/offload_attention.py --out $OUT/c2/offload_attention.json --budget-s 140 > $OUT/c2/offload_attention.log 2>&1; echo "attention rc $?"
cp benchmarks/results/h200/reduction.json $OUT/c2/reduction.json
OUT=$OUT/c2 timeout 200 scripts/gpu-check credit-eval > $OUT/c2/credit_eval.log 2>&1; echo "credit-eval rc $?"
rm -f $OUT/c2/reduction.json
tail -4 $OUT/c2/credit_eval.log
python3 - <<'PY'
import json, os
o = os.environ["OUT"] + "/c2/"
for f in ("offload_ops.json", "offload_attention.json"):
    d = json.load(open(o + f)); sm = [x for x in d["records"] if x["method"] == "smemkit" and "ms" in x]
    print(f, d.get("status"), len(sm), "<=1.12x ideal:", sum(x["ms"] <= 1.12 * x["ideal_ms"] for x in sm))
PY
