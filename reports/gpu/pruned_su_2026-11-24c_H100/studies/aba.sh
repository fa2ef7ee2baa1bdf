# ABA: new / old (_ab) / new, pruned, cases from $CASES; GPU tests of pruned first (new)
set -u
d=$PWD
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1 || { echo install failed; exit 1; }
gpu_header
mkdir -p $OUT
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${TESTS_S:-300} python3 -m pytest -q -x ${TEST_FILES:-tests/test_pruned_gpu.py} 2>&1 | tail -5
fi
T="--backends pruned --cases ${CASES:-tess,tess78} --repeats ${REPEATS:-9} --tls none"
i=0
for side in new old new; do
  i=$((i+1)); echo "== $side"
  if [ $side = old ]; then (cd _ab && PYTHONPATH=/tmp/site:$d/_ab python3 scripts/gpu_timing.py $T --out $OUT/$i$side.json 2>&1 | tail -4); 
  else python3 scripts/gpu_timing.py $T --out $OUT/$i$side.json 2>&1 | tail -4; fi
  python3 -c "
import json,sys
for r in json.load(open('$OUT/$i$side.json'))['rows'] if isinstance(json.load(open('$OUT/$i$side.json')),dict) else json.load(open('$OUT/$i$side.json')):
    s=r.get('stages',{}); print(r['case'], ' '.join(f'{k}={v*1e3:.3f}' for k,v in s.items() if not k.startswith('work')))
" 2>&1 | tail -5
done
