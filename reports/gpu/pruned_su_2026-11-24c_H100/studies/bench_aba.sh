d=$PWD
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1 || exit 1
for side in new old new; do
  echo "== $side"
  if [ $side = old ]; then (cd _ab && cp $d/_scratch/bench_aba.py . && PYTHONPATH=/tmp/site:$d/_ab python3 bench_aba.py 2>&1 | tail -8)
  else PYTHONPATH=/tmp/site:$d python3 _scratch/bench_aba.py 2>&1 | tail -8; fi
done
