source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD
COMMIT=630d2da gpu_header > $OUT/header.txt
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|smsp__warps_issue_stalled_barrier|sm__cycles_elapsed.avg|smsp__inst_executed.sum|sm__warps_active.avg.pct_of_peak_sustained_active'
for spec in "k2 512" "k2n1800 512" "k2n1800 256"; do
  set -- $spec
  python3 _ab/ncu_variant.py $1 $2 >/dev/null 2>&1  # compile outside ncu
  timeout 150 ncu -k regex:pruned_period --launch-skip 1 --launch-count 1 --metrics "$M" \
     python3 _ab/ncu_variant.py $1 $2 > $OUT/stalls_${1}_$2.txt 2>&1
  echo "$spec rc=$?"
done
