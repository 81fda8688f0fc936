cd "$(dirname "$0")/../.." 2>/dev/null || true
mkdir -p $OUT/c6
echo "bf95fc8" > $OUT/c6/tree.txt
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 280 python3 benchmarks/offload_ops.py --quick --skip-congestion --out $OUT/c6/offload_ops_quick.json > $OUT/c6/ops.log 2>&1; echo rc $?
timeout 250 python3 benchmarks/offload_attention.py --quick --out $OUT/c6/offload_attention_quick.json > $OUT/c6/att.log 2>&1; echo rc $?
grep -i "failed" $OUT/c6/ops.log $OUT/c6/att.log | head
tail -2 $OUT/c6/ops.log; tail -2 $OUT/c6/att.log
python3 -c "
import json
for f in ('offload_ops_quick','offload_attention_quick'):
    d=json.load(open('$OUT/c6/'+f+'.json'))
    rs=[r for r in d['records'] if r['method']=='smemkit']
    print(f, len(rs), 'with floor', sum('floor_ms' in r for r in rs), 'floor errors', sum('floor_error' in r for r in rs), 'kernel floors', sum('host_kernel_ms' in r for r in rs))
"
