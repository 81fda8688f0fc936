export PYTHONUNBUFFERED=1
O=$OUT/ncu_4k; mkdir -p $O
export SMEMKIT_CACHE_DIR=/tmp/c-new PYTHONPATH=$PWD/src:$PWD/benchmarks
timeout 330 python3 .branches/ncu_4k.py $O/ncu_4k.json > $O/ncu_4k.log 2>&1; echo rc=$?
cp .branches/ncu_4k.py .branches/call7.sh $O/
grep -v "^==PROF==" $O/ncu_4k.log | cut -c1-1200 | tail -n 30
O2=$OUT/ce8; mkdir -p $O2
export SMEMKIT_CACHE_DIR=/tmp/smemkit-cache PYTHONPATH=$PWD/src
timeout 200 python3 benchmarks/credit_eval.py --out $O2/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O2/credit_eval.log 2>&1
echo rc=$?
grep -A6 '"accuracy"' $O2/credit_eval.log | tr -d ' \n'; echo
grep -A2 '"dispatch_vs' $O2/credit_eval.log
