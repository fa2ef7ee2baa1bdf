source scripts/gpu_env.sh; install_wheels .whl/*.whl >/dev/null 2>&1
d=$PWD
for side in new old_70238aa old_03d2718 new; do
  case $side in new) t=$d;; old_70238aa) t=$d/_ab;; old_03d2718) t=$d/_ab2;; esac
  (cd $t && PYTHONPATH=/tmp/site:$t python3 $d/_probe/new_instance.py $side 2>&1 | grep -v Warn | tail -1)
done
