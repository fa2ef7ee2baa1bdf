d=$PWD
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1 || exit 1
for side in old new old new; do
  echo "== $side"
  if [ $side = old ]; then (cd _ab && PYTHONPATH=/tmp/site:$d/_ab python3 $d/_scratch/cupy_probe.py 2>&1 | grep cupy)
  else PYTHONPATH=/tmp/site:$d python3 _scratch/cupy_probe.py 2>&1 | grep cupy; fi
done
