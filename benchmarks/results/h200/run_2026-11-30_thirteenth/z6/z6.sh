#!/usr/bin/env bash
# Thirteenth session, call 6: which change since b7aaa3f makes main's ring points ~3 % slower (z4, z5)? On 2 shapes x batch 1, 512 x r in {r_hide, 0.05, 0.25}: (a) main; (b) main without the persisting-L2 reset in timing; (c) main's package with b7aaa3f's benchmark script (the sizing probe's 25 ms warm-up); (d) b7aaa3f; (a2) main again.
set -u
O=$OUT/z6; mkdir -p $O
export PYTHONUNBUFFERED=1
ARGS="--shapes 4096x14336,8192x28672 --batches 1,512 --ratios r_hide,0.05,0.25 --skip-congestion --host-ctas 16 --host-window 16384"
S=$(date +%s)
run() { tag=$1; shift; SMEMKIT_CACHE_DIR=/tmp/c-z6 timeout 110 "$@" > $O/$tag.log 2>&1; echo $tag rc=$? t=$(( $(date +%s)-S )); }
run a env PYTHONPATH=$PWD/src python3 benchmarks/offload_ops.py $ARGS --out $O/a.json
run b env PYTHONPATH=$PWD/src python3 -c "
import runpy, sys, torch
import smemkit.runtime.timing as t
t._reset_persisting_l2 = torch.cuda.synchronize
sys.argv = ['offload_ops.py'] + sys.argv[1:]
runpy.run_path('benchmarks/offload_ops.py', run_name='__main__')" $ARGS --out $O/b.json
run c env PYTHONPATH=$PWD/src python3 .branches/s13/b7/benchmarks/offload_ops.py $ARGS --out $O/c.json
run d env PYTHONPATH=$PWD/.branches/s13/b7/src python3 .branches/s13/b7/benchmarks/offload_ops.py $ARGS --out $O/d.json
run a2 env PYTHONPATH=$PWD/src python3 benchmarks/offload_ops.py $ARGS --out $O/a2.json
cp .branches/s13/z6.sh $O/
tar czf $O/logs.tgz -C $O a.log b.log c.log d.log a2.log && rm $O/*.log
python3 - <<'PY'
import json, os
O = os.environ["OUT"] + "/z6"
recs = {}
for tag in ("a", "b", "c", "d", "a2"):
    try:
        d = json.load(open(f"{O}/{tag}.json"))
    except Exception as e:
        print(tag, "missing", e); continue
    recs[tag] = {(r["shape"][0], r["batch"], str(r["r"])): r["ms"] for r in d["records"] if r["method"] == "smemkit"}
keys = sorted(recs["a"])
print("point".ljust(24), " ".join(t.rjust(8) for t in recs))
for k in keys:
    print(str(k).ljust(24), " ".join(f"{recs[t].get(k, 0)*1e3:8.1f}" for t in recs))
PY
