#!/usr/bin/env bash
# Thirteenth session, call 10: bisect the reset's effect on the ring inside offload_ops (z10.py), variants in the order a b e f a b.
set -u
O=$OUT/z10; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-z10 PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
S=$(date +%s)
for v in a b e f a2 b2; do timeout 60 python3 .branches/s13/z10.py ${v:0:1} $O/$v.json > $O/$v.log 2>&1; echo $v rc=$? t=$(( $(date +%s)-S )); done
cp .branches/s13/z10.sh .branches/s13/z10.py $O/
tar czf $O/logs.tgz -C $O a.log b.log e.log f.log a2.log b2.log && rm $O/*.log
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/z10"
recs = {}
for tag in ("a", "b", "e", "f", "a2", "b2"):
    try:
        d = json.load(open(f"{O}/{tag}.json"))
    except Exception as e:
        print(tag, "missing", e); continue
    recs[tag] = {(r["shape"][0], r["batch"], str(r["r"]), r["method"][:4]): r["ms"] for r in d["records"] if r["method"] in ("smemkit", "copy_then_cublas")}
keys = sorted(recs["a"])
print("point".ljust(30), " ".join(t.rjust(8) for t in recs))
for k in keys:
    print(str(k).ljust(30), " ".join(f"{recs[t].get(k, 0)*1e3:8.1f}" for t in recs))
PY
