#!/usr/bin/env bash
# Fourteenth session: which part of main's code makes the ring 2-3.5 % slower than b7aaa3f's (a1: four alternating processes each, every one). Arms, alternating, three processes each, a1's 32 points:
# main; b7 (b7aaa3f's package and script); b7t (main with b7aaa3f's runtime/timing.py); nr (main with the persisting-L2 reset replaced by a synchronize).
set -u
O=$OUT/a5; mkdir -p $O
export PYTHONUNBUFFERED=1
ARGS="--batches 1,512 --ratios r*,r_hide,0.05,0.25 --skip-congestion --host-ctas 16 --host-window 16384"
B=.branches/s14
S=$(date +%s)
for i in 1 2 3; do
  for tag in main b7 b7t nr; do
    case $tag in main) SRC=$PWD/src; BENCH=benchmarks/offload_ops.py;; b7) SRC=$PWD/$B/b7/src; BENCH=$B/b7/benchmarks/offload_ops.py;;
      b7t) SRC=$PWD/$B/m_b7t/src; BENCH=benchmarks/offload_ops.py;; nr) SRC=$PWD/$B/m_nr/src; BENCH=benchmarks/offload_ops.py;; esac
    SMEMKIT_CACHE_DIR=/tmp/c-a5-$tag PYTHONPATH=$SRC timeout 70 python3 $BENCH $ARGS --out $O/${tag}_$i.json > $O/${tag}_$i.log 2>&1
    echo $tag $i rc=$? t=$(( $(date +%s)-S ))
  done
done
cp $B/a5.sh $O/
python3 - <<'PY'
import json, os, statistics
O = os.environ["OUT"] + "/a5"
runs = {}
for f in sorted(os.listdir(O)):
    if f.endswith(".json"):
        d = json.load(open(f"{O}/{f}"))
        runs[f[:-5]] = {(tuple(r["shape"]), r["batch"], str(r["r"]), r["method"]): r for r in d["records"]}
base = runs["main_1"]
rows = []
print("run      <=1.12x  ring/main_1  copy/main_1  cublas/main_1")
for tag, recs in runs.items():
    sm = [r for k, r in recs.items() if k[3] == "smemkit" and r["r_actual"] > 0]
    def med(method, path=None):
        v = [recs[k]["ms"] / base[k]["ms"] for k in recs if k[3] == method and k in base and (path is None or recs[k].get("path") == path)]
        return statistics.median(v) if v else float("nan")
    row = (tag, sum(r['ms_over_ideal'] <= 1.12 for r in sm), len(sm), med('smemkit', 'ring'), med('copy_then_cublas'), med('cublas_hbm'))
    rows.append(row)
    print(f"{row[0]:8s} {row[1]:3d}/{row[2]}  {row[3]:.3f}  {row[4]:.3f}  {row[5]:.3f}")
json.dump(rows, open(f"{O}/summary.json", "w"), indent=1)
PY
cd $O && tar czf runs.tgz *.json *.log && rm -f main_* b7_* b7t_* nr_*
