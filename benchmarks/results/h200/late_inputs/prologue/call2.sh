O=$OUT/prologue; mkdir -p $O
export PYTHONPATH=$PWD/src
timeout 500 python3 .branches/prologue.py $O/prologue.json > $O/prologue.log 2> $O/prologue.err
echo rc=$?
cp .branches/prologue.py .branches/call2.sh $O/
tar -czf $OUT/prologue.tgz -C $OUT prologue
cat $O/prologue.log; tail -5 $O/prologue.err
