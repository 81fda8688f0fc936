#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/s6t11; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-s6 PYTHONPATH=$PWD/src:$PWD/benchmarks
timeout 300 python3 .branches/clock_trace.py $O > $O/clock_trace.log 2>&1; echo trace rc=$?
grep -i "error\|traceback" $O/clock_trace.log | head -3
grep -v "time_gpu" $O/clock_trace.log | tail -n 12
python3 - "$O" <<'PY'
import sys, csv, json, datetime
O = sys.argv[1]
marks = json.load(open(O + "/clock_trace.json"))["marks"]
rows = []
for line in open(O + "/smi_trace.csv"):
    p = [x.strip() for x in line.split(",")]
    try:
        ts = datetime.datetime.strptime(p[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
    except ValueError:
        continue
    rows.append((ts, p[1:]))
# summarise the samples between consecutive time_gpu start/end marks
starts = [m for m in marks if "start" in m[1]]
for i, (t0, what) in enumerate(marks):
    if "time_gpu start" in what or what == "alone start":
        t1 = next((t for t, w in marks[i + 1:] if "end" in w), None)
        end = next((w for t, w in marks[i + 1:] if "end" in w), "")
        s = [r for ts, r in rows if t1 and t0 - 0.1 <= ts <= t1 + 0.1]
        if s:
            clocks = sorted(int(r[0].split()[0]) for r in s)
            pw = sorted(float(r[2].split()[0]) for r in s)
            reasons = sorted(set(r[5] for r in s))
            print(f"{what[:30]:30s} -> {end[:28]:28s} n={len(s):3d} sm {clocks[0]}-{clocks[-1]} MHz power {pw[0]:.0f}-{pw[-1]:.0f} W reasons {reasons}")
PY
cp .branches/clock_trace.py .branches/t11.sh $O/
cd $OUT && tar czf s6t11.tgz s6t11 && rm -rf s6t11
