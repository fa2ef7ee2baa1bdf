# row_gate_flux.patch on the GPU: tests, A/B (old = HEAD, new = patched working tree), clocks, exact set
# _ab/ab_time.py is ../pruned_counts_2026-12-01b_H200/call2/ab_time.py, copied there
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1
R=$PWD; export PYTHONPATH=/tmp/site:$R TLS_KERNEL_CACHE_DIR=/tmp/kc
COMMIT=${COMMIT:-?} gpu_header > $OUT/header.txt
timeout 230 python3 -m pytest -q -p no:cacheprovider -n 8 -m "gpu or not gpu" tests/test_pruned_gpu.py > $OUT/tests.txt 2>&1; echo "tests rc $?" >> $OUT/tests.txt; tail -3 $OUT/tests.txt
tree() { case $1 in old) echo $R/_ab/old;; *) echo $R;; esac; }
for r in 1 2 3; do
  for t in old new; do d=$(tree $t); (cd $d && PYTHONPATH=/tmp/site:$d timeout 100 python3 $R/_ab/ab_time.py k2 25 $([ $r = 1 ] && echo check)) >> $OUT/k2_$t.jsonl 2>>$OUT/err.log; done
done
for t in old new; do d=$(tree $t); (cd $d && PYTHONPATH=/tmp/site:$d timeout 60 python3 scripts/profile_pruned.py k2 --clocks) > $OUT/clocks_$t.txt 2>&1; done
for f in $OUT/*.jsonl; do echo $f; cut -c1-120 $f; done
timeout 150 python3 scripts/exactness.py --backends pruned --synthetic 12 --big --out $OUT/exactness > $OUT/exact.txt 2>&1; echo "exact rc $?" >> $OUT/exact.txt; tail -5 $OUT/exact.txt
