#!/usr/bin/env bash
# The single-worker abort, reproduced (run from the repository root with .whl and .whl-dask carried;
# .whl-spy: a py-spy wheel, optional): multigpu_scaling.py on N curves for RUNS, nvidia-smi and
# py-spy dumps of its processes every EVERY seconds.
source scripts/gpu_env.sh
install_wheels .whl/*.whl .whl-dask/*.whl $(ls .whl-spy/*.whl 2>/dev/null) || exit 1
gpu_header > $OUT/header.txt
N=${N:-2000}
python3 scripts/multigpu_scaling.py --n $N --backends pruned --runs ${RUNS:-1:distributed:1} --timeout ${T:-200} \
  --stall-dump 20 --work /tmp/scal --out $OUT/scal > $OUT/scal.log 2>&1 &
main=$!
for i in $(seq 1 ${ROUNDS:-12}); do
  sleep ${EVERY:-15}
  { date +%T; nvidia-smi --query-gpu=utilization.gpu,memory.used,clocks.sm --format=csv,noheader;
    nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; } >> $OUT/smi.txt
  for pid in $(pgrep -f "distributed|validation.batch|multiprocessing"); do
    echo "=== round $i pid $pid $(tr '\0' ' ' < /proc/$pid/cmdline | cut -c1-200)" >> $OUT/spy.txt
    [ -x /tmp/site/bin/py-spy ] && timeout 20 /tmp/site/bin/py-spy dump --native --pid $pid >> $OUT/spy.txt 2>&1
  done
  kill -0 $main 2>/dev/null || break
done
wait $main
find /tmp/scal -name "*.log" -exec cp --parents {} $OUT/ \;
cp -r /tmp/scal $OUT/scal_work 2>/dev/null; rm -rf $OUT/scal_work/*/out $OUT/scal_work/*/*/out
