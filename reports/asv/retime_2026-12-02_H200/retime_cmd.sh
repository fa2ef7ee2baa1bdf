source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD
COMMIT=630d2da gpu_header > $OUT/header.txt
timeout 190 python3 scripts/asv_retime.py --trees . _ab . --repeats 7 --cases cpu:2000:10000 cpu:20000:1000 cpu:4320:1000 cpu:4320:10000 pruned:2000:1000 --out $OUT/retime_changed.json > $OUT/retime_changed.log 2>&1; echo "changed rc=$?"
timeout 110 python3 scripts/asv_retime.py --trees . _ab . --repeats 7 --cases basic:4320:1000 basic:500:10000 cupy:4320:1000 cupy:500:10000 numba:500:1000 numba:500:10000 --out $OUT/retime_unchanged.json > $OUT/retime_unchanged.log 2>&1; echo "unchanged rc=$?"
tail -12 $OUT/retime_changed.log $OUT/retime_unchanged.log
