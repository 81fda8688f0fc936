set -x
O=$OUT/lars_pf; mkdir -p $O
export PYTHONPATH=$PWD/src
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $O/smi.txt
timeout 420 python3 .branches/lars_pf.py $O/lars_pf.json > $O/lars_pf.log 2> $O/lars_pf.err
echo rc=$?
cp .branches/lars_pf.py .branches/call1.sh $O/
tar -czf $OUT/lars_pf.tgz -C $OUT lars_pf
grep -v "^$" $O/lars_pf.log | tail -20
tail -5 $O/lars_pf.err
