# The thirteenth session's regress.py (reports/gpu/pruned_seeds_2026-11-24b_H100/bench_regressions/), old tree in _ab
d=$PWD
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1 || exit 1
C="cupy:4320:1000 cupy:500:1000 simple:2000:10000 simple:500:10000 thrust:2000:10000 thrust:20000:1000 thrust:4320:1000"
for side in new old new; do
  echo "== $side"
  if [ $side = old ]; then (cd _ab && PYTHONPATH=/tmp/site:$d/_ab python3 $d/reports/gpu/pruned_seeds_2026-11-24b_H100/bench_regressions/regress.py $C 2>&1 | grep median)
  else PYTHONPATH=/tmp/site:$d python3 reports/gpu/pruned_seeds_2026-11-24b_H100/bench_regressions/regress.py $C 2>&1 | grep median; fi
done
