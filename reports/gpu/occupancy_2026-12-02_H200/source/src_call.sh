source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD
export TLS_NVCC_FLAGS=-lineinfo
COMMIT=630d2da gpu_header > $OUT/header.txt
for spec in "k2n1800 512" "k2n1800 256" "k2 512" "k2 256"; do
  set -- $spec
  python3 _ab/ncu_variant.py $1 $2 >/dev/null 2>&1  # compile outside ncu
  timeout 120 ncu --set full --import-source yes -k regex:pruned_period --launch-skip 1 --launch-count 1 \
     -o /tmp/rep_${1}_$2 python3 _ab/ncu_variant.py $1 $2 > $OUT/ncu_${1}_$2.log 2>&1
  echo "$spec rc=$?"
  ncu -i /tmp/rep_${1}_$2.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $OUT/src_${1}_$2.csv.gz
  ncu -i /tmp/rep_${1}_$2.ncu-rep --page details --csv 2>&1 | gzip > $OUT/details_${1}_$2.csv.gz
done
ls -la $OUT
