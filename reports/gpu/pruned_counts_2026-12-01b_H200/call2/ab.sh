# A/B of trees, alternating, one process each: tess old/new (depth count), k2 new/lean (lean patch)
source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1
R=$PWD; export TLS_KERNEL_CACHE_DIR=/tmp/kc
tree() { case $1 in old) echo $R/_ab/old;; lean) echo $R/_ab/lean;; *) echo $R;; esac; }
for r in 1 2 3; do
  for t in old new; do d=$(tree $t); (cd $d && PYTHONPATH=/tmp/site:$d timeout 100 python3 $R/_ab/ab_time.py tess 25 $([ $r = 1 ] && echo check)) >> $OUT/tess_$t.jsonl 2>>$OUT/err.log; done
  for t in new lean; do d=$(tree $t); (cd $d && PYTHONPATH=/tmp/site:$d timeout 100 python3 $R/_ab/ab_time.py k2 25 $([ $r = 1 ] && echo check)) >> $OUT/k2_$t.jsonl 2>>$OUT/err.log; done
done
for f in $OUT/*.jsonl; do echo $f; cut -c1-90 $f; done
