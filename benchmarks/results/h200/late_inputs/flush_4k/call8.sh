O=$OUT/flush_4k; mkdir -p $O
export PYTHONPATH=$PWD/src SMEMKIT_CACHE_DIR=/tmp/smemkit-cache
timeout 400 python3 .branches/flush_4k.py $O/flush_4k.json > $O/flush_4k.log 2> $O/flush_4k.err
echo rc=$?
cp .branches/flush_4k.py .branches/call8.sh $O/
cat $O/flush_4k.log; grep -v Warning $O/flush_4k.err | tail -3
