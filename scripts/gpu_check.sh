#!/usr/bin/env bash
# On the device machine, in the repository root, with .whl carried:
#   bash scripts/gpu_check.sh [pytest args...]
# Installs the carried wheels, runs the GPU tests and the timing table; logs
# go to $OUT (or reports/gpu/ when OUT is unset). Add test files to GPU_TESTS.
# TIMING=0 skips the timing table; TIMING_ARGS passes options to it.
set -o pipefail
OUT=${OUT:-reports/gpu}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
GPU_TESTS=${GPU_TESTS:-"tests/test_pycuda_exact.py tests/test_cuda_sources.py tests/test_pycuda_host.py tests/test_conformance.py"}
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
} | tee "$OUT/gpu_check_header.txt"
rc=0
python3 -m pytest -m "gpu or not gpu" -q -p no:cacheprovider $GPU_TESTS "$@" 2>&1 | tee "$OUT/gpu_tests.log" || rc=1
if [ "${TIMING:-1}" != 0 ]; then
    python3 scripts/gpu_timing.py --out "$OUT/gpu_timing.json" ${TIMING_ARGS:-} 2>&1 | tee "$OUT/gpu_timing.log" || rc=1
fi
exit $rc
