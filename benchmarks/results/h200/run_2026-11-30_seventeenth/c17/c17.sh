#!/bin/bash
# s17 call 17: the attention benchmark again from main (c2's three host-bound outliers)
export PYTHONPATH=$PWD/src:$PYTHONPATH PYTHONUNBUFFERED=1
mkdir -p $OUT/c17
timeout 200 python3 benchmarks/offload_attention.py --out $OUT/c17/offload_attention.json --budget-s 140 > $OUT/c17/offload_attention.log 2>&1; echo rc $?
python3 - <<'PY'
import json, os
d = json.load(open(os.environ["OUT"] + "/c17/offload_attention.json"))
sm = [x for x in d["records"] if x["method"] == "smemkit" and "ms" in x]
print(d.get("status"), len(sm), "<=1.12x:", sum(x["ms"] <= 1.12 * x["ideal_ms"] for x in sm))
for x in sm:
    if x["ms"] > 1.12 * x["ideal_ms"]: print(x["batch"], x["context"], x["r"], round(x["ms"] / x["ideal_ms"], 3))
PY
