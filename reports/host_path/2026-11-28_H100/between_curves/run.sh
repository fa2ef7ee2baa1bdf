source scripts/gpu_env.sh && install_wheels .whl/*.whl >/dev/null 2>&1
export PYTHONPATH=$PYTHONPATH:$PWD/scripts:$PWD/tests
COMMIT=$(cat .commit) gpu_header > $OUT/header.txt
S=reports/host_path/2026-11-28_H100/between_curves.py
for r in 1 2; do
  (cd _ab && PYTHONPATH=$PYTHONPATH:$PWD timeout 150 python3 ../$S --rounds 5 > $OUT/bc_old_$r.txt 2>&1)
  PYTHONPATH=$PYTHONPATH:$PWD timeout 150 python3 $S --rounds 5 > $OUT/bc_new_$r.txt 2>&1
done
grep -H "curves/s\|templates objects" $OUT/bc_*.txt

