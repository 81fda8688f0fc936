O=$OUT/ab_final; mkdir -p $O
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 300 python3 .branches/ab_final.py $O/ab_final.json > $O/ab_final.log 2> $O/ab_final.err
echo rc=$?
cp .branches/ab_final.py .branches/call9.sh $O/
cat $O/ab_final.log; tail -3 $O/ab_final.err
