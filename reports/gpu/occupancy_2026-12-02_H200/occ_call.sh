source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1; export PYTHONPATH=/tmp/site:$PWD
COMMIT=630d2da gpu_header > $OUT/header.txt
for n in 1800 2400; do
  timeout 200 python3 _ab/occupancy.py --case k2n$n --variants 512x2,256x2 --rounds 7 --repeats 5 \
     --same-counts shifts,depth_pass,coarse_pass,fine_pass,exact_macs --out $OUT/occ_$n.json 2>&1 | grep -v Warning | tee $OUT/occ_$n.txt
done
