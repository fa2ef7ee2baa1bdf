source scripts/gpu_env.sh && install_wheels .whl/*.whl >/dev/null 2>&1
COMMIT=825367e gpu_header > $OUT/header.txt
for r in 1 2; do
  (cd _ab && timeout 200 python3 scripts/throughput.py --backend pruned --n 64 --workers 1 --repeats 5 --tls-curves 0 --out $OUT/old_$r.json > $OUT/old_$r.log 2>&1)
  timeout 200 python3 scripts/throughput.py --backend pruned --n 64 --workers 1 --repeats 5 --tls-curves 0 --out $OUT/new_$r.json > $OUT/new_$r.log 2>&1
done
grep -h "curves/s warm" $OUT/*.log
for f in $OUT/*.json; do python3 -c "import json,sys;r=json.load(open('$f'));print('$f'.split('/')[-1], round(r['targets']['end_to_end_over_packed'],3), round(r['search_many']['curves_per_s_warm'],1), round(r['batch_w1']['curves_per_s_warm'],1), round(r['lean_w1']['curves_per_s_warm'],1))"; done
