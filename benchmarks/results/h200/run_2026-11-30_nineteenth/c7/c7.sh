cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c7
echo "f249c55" > $OUT/c7/tree.txt
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 280 python3 benchmarks/offload_ops.py --quick --skip-congestion --out $OUT/c7/offload_ops_quick.json > $OUT/c7/ops.log 2>&1; echo rc $?
timeout 250 python3 benchmarks/offload_attention.py --quick --out $OUT/c7/offload_attention_quick.json > $OUT/c7/att.log 2>&1; echo rc $?
grep -i "failed" $OUT/c7/ops.log $OUT/c7/att.log | head
tail -2 $OUT/c7/ops.log; tail -2 $OUT/c7/att.log
python3 -c "
import json
for f in ('offload_ops_quick','offload_attention_quick'):
    d=json.load(open('$OUT/c7/'+f+'.json'))
    rs=[r for r in d['records'] if r['method']=='smemkit']
    print(f, len(rs), 'with floor', sum('floor_ms' in r for r in rs), 'floor errors', sum('floor_error' in r for r in rs), 'kernel floors', sum('host_kernel_ms' in r for r in rs))
"
