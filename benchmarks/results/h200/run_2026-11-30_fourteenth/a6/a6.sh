#!/usr/bin/env bash
# Fourteenth session: the persisting-L2 reset and the ring (a5: the reset alone makes main's ring 2-3.5 % slower). State before/after the reset (a6.py); then alternating processes, 16 points: main, nr (no reset), rs (reset, then the persisting-L2 limit set back to its value before).
set -u
O=$OUT/a6; mkdir -p $O
export PYTHONUNBUFFERED=1
B=.branches/s14
PYTHONPATH=$PWD/src python3 $B/a6.py 2>&1 | tee $O/a6_state.log
ARGS="--batches 1,512 --ratios r_hide,0.25 --skip-congestion --host-ctas 16 --host-window 16384"
S=$(date +%s)
for i in 1 2; do
  for tag in main nr rs; do
    case $tag in main) SRC=$PWD/src;; nr) SRC=$PWD/$B/m_nr/src;; rs) SRC=$PWD/$B/m_rs/src;; esac
    SMEMKIT_CACHE_DIR=/tmp/c-a6-$tag PYTHONPATH=$SRC timeout 60 python3 benchmarks/offload_ops.py $ARGS --out $O/${tag}_$i.json > $O/${tag}_$i.log 2>&1
    echo $tag $i rc=$? t=$(( $(date +%s)-S ))
  done
done
cp $B/a6.sh $B/a6.py $O/
python3 - <<'PY'
import json, os, statistics
O = os.environ["OUT"] + "/a6"
runs = {f[:-5]: {(tuple(r["shape"]), r["batch"], str(r["r"]), r["method"]): r for r in json.load(open(f"{O}/{f}"))["records"]}
        for f in sorted(os.listdir(O)) if f.endswith(".json") and "_" in f}
base = runs["main_1"]
print("run      ring/main_1  copy/main_1  cublas/main_1")
for tag, recs in runs.items():
    def med(method, path=None):
        v = [recs[k]["ms"] / base[k]["ms"] for k in recs if k[3] == method and k in base and (path is None or recs[k].get("path") == path)]
        return statistics.median(v) if v else float("nan")
    print(f"{tag:8s} {med('smemkit', 'ring'):.3f}  {med('copy_then_cublas'):.3f}  {med('cublas_hbm'):.3f}")
PY
cd $O && tar czf runs.tgz main_* nr_* rs_* && rm -f main_* nr_* rs_*
