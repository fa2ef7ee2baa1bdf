#!/usr/bin/env bash
# On the device machine, in the repository root, with .whl carried:
#   bash scripts/gpu_cupy_numba.sh
# Installs the carried wheels (numpy 2.4 first on the path: numba-cuda 0.30.4
# fails on numpy 2.5), then for the cupy and numba backends: their tests and
# the conformance suite on the GPU (slow ones included), the exactness sweep
# against cpu, and the timing table against the PyCUDA backends and CPU TLS.
# Logs go to $OUT (or reports/gpu/ when OUT is unset). PARTS picks the parts
# (default "tests exact timing"); each has a time limit in seconds: TESTS_S,
# EXACT_S, TIMING_S. COMMIT names the commit when the tree has no .git.
set -o pipefail
OUT=${OUT:-reports/gpu}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:$PATH CUDA_PATH=/usr/local/cuda
export PYTHONUNBUFFERED=1
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import numpy, cupy, numba, numba.cuda; print('numpy', numpy.__version__, \
'cupy', cupy.__version__, 'numba', numba.__version__)"
} 2>&1 | tee "$OUT/cupy_numba_header.txt"
PARTS=${PARTS:-tests exact timing}
rc=0
[[ " $PARTS " == *" tests "* ]] && { timeout "${TESTS_S:-240}" python3 -m pytest -m "gpu or not gpu" -q -rP -p no:cacheprovider \
    -k "cupy or numba" tests/test_cupy_backend.py tests/test_numba_cuda.py \
    tests/test_conformance.py 2>&1 | tee "$OUT/cupy_numba_tests.log" || rc=1; }
[[ " $PARTS " == *" exact "* ]] && { timeout "${EXACT_S:-150}" python3 scripts/exactness.py --backends cupy numba \
    --synthetic "${SYNTHETIC:-10}" --out "$OUT/exactness_cupy_numba" 2>&1 \
    | tee "$OUT/cupy_numba_exactness.log" || rc=1; }
[[ " $PARTS " == *" timing "* ]] && { timeout "${TIMING_S:-180}" python3 scripts/gpu_timing.py --backends thrust,cupy,numba \
    --cases k2,tess --tls k2 --repeats 3 --out "$OUT/cupy_numba_timing.json" 2>&1 \
    | tee "$OUT/cupy_numba_timing.log" || rc=1; }
exit $rc
