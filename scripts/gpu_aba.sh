#!/usr/bin/env bash
# An A/B/A timing of BACKEND (pruned) on the GPU machine, in the repository root, with
# ".whl" and "_ab" carried: new (the working tree) / old (_ab, made beforehand by
#   rm -rf _ab && mkdir _ab && git archive REV backends scripts datasets validation \
#       benchmarks tests pyproject.toml | tar -x -C _ab) / new, in one call, so the
# machine's drift between calls does not pass for a change.
#   OUT=$OUT/aba bash scripts/gpu_aba.sh
# BACKEND=tensor CASES=k2,k2w times `tensor` (its kernel by CUDA events: chi2_scan.kernel).
# CASES (k2,tess,tess78) and REPEATS (15): scripts/gpu_timing.py's; TESTS=1 runs
# TEST_FILES (tests/test_pruned_gpu.py) on the new side first; SPAN (a script
# that splits a warm search's wall by CUDA events, e.g. the fifteenth session's
# reports/gpu/pruned_host2_2026-11-24d_H100/device_span.py) runs on each side
# after the timings, on the same cases. $OUT gets each side's gpu_timing JSON (1new, 2old, 3new).
set -u
d=$PWD
[ -d _ab ] || { echo "no _ab here: make it from the parent commit first (scripts/gpu_aba.sh's header)"; exit 1; }
source scripts/gpu_env.sh
install_wheels .whl/*.whl >/dev/null 2>&1 || { echo "installing the wheels in .whl failed"; exit 1; }
gpu_header
mkdir -p "$OUT"
if [ "${TESTS:-0}" = 1 ]; then
    timeout "${TESTS_S:-300}" python3 -m pytest -q -x -n 8 ${TEST_FILES:-tests/test_pruned_gpu.py} 2>&1 | tail -3
fi
side() {  # side NAME: cd and PYTHONPATH for the new tree or _ab
    if [ "$1" = old ]; then cd "$d/_ab"; export PYTHONPATH=/tmp/site:$d/_ab; else cd "$d"; export PYTHONPATH=/tmp/site:$d; fi
}
CASES=${CASES:-k2,tess,tess78}
i=0
for name in new old new; do
    i=$((i + 1)); echo "== $name"; side $name
    python3 scripts/gpu_timing.py --backends "${BACKEND:-pruned}" --cases "$CASES" --repeats "${REPEATS:-15}" \
        --tls none --out "$OUT/$i$name.json" 2>&1 | grep -v "^{" | tail -4
    python3 - "$OUT/$i$name.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1])):
    s = r.get("stages", {})
    print(r["case"].split()[0], " ".join(f"{k}={v * 1e3:.3f}" for k, v in s.items() if k.startswith(("fold", "chi2"))))
PY
done
if [ -n "${SPAN:-}" ]; then
    for name in new old; do
        side $name; echo "== span $name"; python3 "$d/$SPAN" ${CASES//,/ } 2>&1 | grep ": wall"
    done
fi
cd "$d"
