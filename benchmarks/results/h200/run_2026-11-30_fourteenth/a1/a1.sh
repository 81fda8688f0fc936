#!/usr/bin/env bash
# Fourteenth session, call 1: the offload gap between main and b7aaa3f (thirteenth session z4/z5: 68-70 vs 79-80 of 112) in alternating processes, four each, on 32 points (4 shapes x batch 1, 512 x r*, r_hide, 0.05, 0.25), congestion probe skipped (16 CTAs x 16 KB, the probe's choice in every recent run).
set -u
O=$OUT/a1; mkdir -p $O
export PYTHONUNBUFFERED=1
ARGS="--batches 1,512 --ratios r*,r_hide,0.05,0.25 --skip-congestion --host-ctas 16 --host-window 16384"
S=$(date +%s)
for i in 1 2 3 4; do
  for tag in main b7; do
    if [ $tag = main ]; then SRC=$PWD/src; BENCH=benchmarks/offload_ops.py; else SRC=$PWD/.branches/s14/b7/src; BENCH=.branches/s14/b7/benchmarks/offload_ops.py; fi
    SMEMKIT_CACHE_DIR=/tmp/c-a1-$tag PYTHONPATH=$SRC timeout 70 python3 $BENCH $ARGS --out $O/${tag}_$i.json > $O/${tag}_$i.log 2>&1
    echo $tag $i rc=$? t=$(( $(date +%s)-S ))
  done
done
cp .branches/s14/a1.sh $O/
tar czf $O/logs.tgz -C $O $(cd $O && ls *.log) && rm $O/*.log
python3 - <<'PY'
import json, os, statistics
O = os.environ["OUT"] + "/a1"
runs = {}
for f in sorted(os.listdir(O)):
    if f.endswith(".json"):
        d = json.load(open(f"{O}/{f}"))
        runs[f[:-5]] = {(tuple(r["shape"]), r["batch"], str(r["r"]), r["method"]): r for r in d["records"]}
base = runs["main_1"]
print("run      <=1.12x  ring/main_1  copy/main_1  cublas/main_1")
for tag, recs in runs.items():
    sm = [r for k, r in recs.items() if k[3] == "smemkit" and r["r_actual"] > 0]
    def med(method, path=None):
        v = [recs[k]["ms"] / base[k]["ms"] for k in recs if k[3] == method and k in base and (path is None or recs[k].get("path") == path)]
        return statistics.median(v) if v else float("nan")
    print(f"{tag:8s} {sum(r['ms_over_ideal'] <= 1.12 for r in sm):3d}/{len(sm)}  {med('smemkit', 'ring'):.3f}  {med('copy_then_cublas'):.3f}  {med('cublas_hbm'):.3f}")
PY
