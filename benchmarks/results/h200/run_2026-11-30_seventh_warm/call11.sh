O=$OUT/ce9; mkdir -p $O
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 240 python3 benchmarks/credit_eval.py --out $O/credit_eval.json --baselines benchmarks/results/h200/reduction.json > $O/credit_eval.log 2>&1
echo rc=$?
grep -A6 '"accuracy"' $O/credit_eval.log | tr -d ' \n'; echo
grep -A1 '"dispatch_vs' $O/credit_eval.log
