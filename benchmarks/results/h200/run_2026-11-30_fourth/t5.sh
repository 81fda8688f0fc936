#!/usr/bin/env bash
set -u
export PYTHONUNBUFFERED=1
O=$OUT/t5; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv > $O/smi.txt
OUT=$O timeout 570 bash scripts/gpu-check reduction-bench credit-eval > $O/run.log 2>&1; echo rc=$?
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv >> $O/smi.txt
tail -n 30 $O/run.log
cd $OUT && tar czf t5.tgz t5 && rm -rf t5
