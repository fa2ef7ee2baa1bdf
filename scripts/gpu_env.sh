# Sourced by gpu_check.sh, gpu_peers.sh, gpu_protocol.sh, gpu_suites.sh and
# gpu_throughput.sh (gpu_bench.sh installs into a site of its own).
# install_wheels FILES...: the carried wheels into /tmp/site (SITE), first on
# PYTHONPATH (numpy 2.4 from the wheels: numba-cuda 0.30.4 fails on numpy
# 2.5), with CUDA's tools on PATH; gpu_header: date, commit (COMMIT, else
# git's: the device's checkout may be stale), the sources' digest
# (tree_digest), GPU (read, never set: its maximum clocks, power limit,
# temperature), CPU. Python runs unbuffered, a crashing process prints its
# Python stack, and progress bars redraw at most every TQDM_MININTERVAL (10)
# seconds in the logs.
install_wheels() {
    # a wheel carried in two folders once (pip refuses the pair): the device
    # keeps the folders of earlier calls, so .whl-bench and .whl-dask meet
    local -A seen=()
    local wheel unique=()
    for wheel in "$@"; do
        [[ -n ${seen[${wheel##*/}]:-} ]] || unique+=("$wheel")
        seen[${wheel##*/}]=1
    done
    "${PYTHON:-python3}" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "${SITE:-/tmp/site}" "${unique[@]}" || return 1
    export PYTHONPATH=${SITE:-/tmp/site}:$PWD${PYTHONPATH:+:$PYTHONPATH} PATH=/usr/local/cuda/bin:$PATH \
        CUDA_PATH=/usr/local/cuda
    # transitleastsquares' gufuncs compiled and cached once, here: processes that first import it at once
    # can cache mismatched halves of one and then crash loading it (numba #10128; call 3 of
    # reports/gpu/survey_reads_2026-12-03_H200)
    "${PYTHON:-python3}" -c "import transitleastsquares" || return 1
}

# tree_digest: a hash of the sources as they lie in the current directory
# (backends, scripts, validation, benchmarks, datasets: .py, .cu, .cuh, .sh),
# not as git says: the device's git HEAD can be older than its tree, and
# COMMIT is written by hand ("REV + an edit"). The same command here, on the
# tree that was sent, says whether it is the one that ran.
tree_digest() {
    find backends scripts validation benchmarks datasets -type f -not -path '*/__pycache__/*' \
        \( -name '*.py' -o -name '*.cu' -o -name '*.cuh' -o -name '*.sh' \) 2>/dev/null |
        LC_ALL=C sort | xargs -r sha256sum | sha256sum | cut -c1-16
}

gpu_header() {
    echo "date: $(date -u +%FT%TZ)"
    # the device copy's git HEAD can be older than the tree that runs (2026-12-03 call 7): callers set COMMIT
    echo "commit: ${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown) (git HEAD here, COMMIT unset)}"
    echo "sources: $(tree_digest) (scripts/gpu_env.sh's tree_digest of this tree)"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "GPU: none"
    nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv 2>/dev/null
    echo "cpu: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
}

export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 TQDM_MININTERVAL=${TQDM_MININTERVAL:-10}
