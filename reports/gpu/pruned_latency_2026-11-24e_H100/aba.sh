# gpu_timing new / old (_ab, the parent commit) / new in one call; CASES, REPEATS; TESTS=0 skips the pruned GPU tests
set -u
d=$PWD
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1 || { echo install failed; exit 1; }
gpu_header
mkdir -p $OUT
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${TESTS_S:-300} python3 -m pytest -q -x -n 8 ${TEST_FILES:-tests/test_pruned_gpu.py} 2>&1 | tail -3
fi
i=0
for side in new old new; do
  i=$((i+1)); echo "== $side"
  if [ $side = old ]; then cd _ab; export PYTHONPATH=/tmp/site:$d/_ab; else cd $d; export PYTHONPATH=/tmp/site:$d; fi
  python3 scripts/gpu_timing.py --backends pruned --cases ${CASES:-k2,tess,tess78} --repeats ${REPEATS:-15} --tls none --out $OUT/$i$side.json 2>&1 | tail -4
  python3 - $OUT/$i$side.json <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    s = r.get("stages", {})
    print(r["case"].split()[0], " ".join(f"{k}={v*1e3:.3f}" for k, v in s.items() if k.startswith(("fold", "chi2")) ))
PY
done
# device_span.py (the fifteenth session's) on each side, after the timings
for side in new old; do
  if [ $side = old ]; then cd $d/_ab; export PYTHONPATH=/tmp/site:$d/_ab; else cd $d; export PYTHONPATH=/tmp/site:$d; fi
  echo "== device span $side"; python3 $d/reports/gpu/pruned_host2_2026-11-24d_H100/device_span.py tess k2 2>&1 | tail -2
done
cd $d
