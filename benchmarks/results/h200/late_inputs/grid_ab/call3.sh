O=$OUT/grid_ab; mkdir -p $O
export PYTHONPATH=$PWD/src
timeout 500 python3 .branches/grid_ab.py $O/grid_ab.json > $O/grid_ab.log 2> $O/grid_ab.err
echo rc=$?
cp .branches/grid_ab.py .branches/call3.sh $O/
cat $O/grid_ab.log; tail -5 $O/grid_ab.err
