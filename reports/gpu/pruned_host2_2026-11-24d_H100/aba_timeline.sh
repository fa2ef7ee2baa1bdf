# timeline + gpu_timing, new / old (_ab) / new; CASES, REPEATS
set -u
d=$PWD
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1 || { echo install failed; exit 1; }
gpu_header
mkdir -p $OUT
R=reports/gpu/pruned_host2_2026-11-24d_H100
# the thirteenth session's timeline.py with timeline.diff (names one side lacks skipped; SPIN=1 polls the wait)
patch -s -o /tmp/timeline.py reports/gpu/pruned_seeds_2026-11-24b_H100/timeline.py $R/timeline.diff
if [ "${TESTS:-1}" = 1 ]; then
  timeout ${TESTS_S:-300} python3 -m pytest -q -x ${TEST_FILES:-tests/test_pruned_gpu.py} 2>&1 | tail -3
fi
i=0
for side in new old new; do
  i=$((i+1)); echo "== $side"
  if [ $side = old ]; then cd _ab; export PYTHONPATH=/tmp/site:$d/_ab; else cd $d; export PYTHONPATH=/tmp/site:$d; fi
  python3 /tmp/timeline.py ${TCASES:-tess k2} > $OUT/timeline_$i$side.txt 2>&1; grep "wall median" $OUT/timeline_$i$side.txt
  python3 scripts/gpu_timing.py --backends pruned --cases ${CASES:-k2,tess} --repeats ${REPEATS:-15} --tls none --out $OUT/$i$side.json 2>&1 | tail -3
done
