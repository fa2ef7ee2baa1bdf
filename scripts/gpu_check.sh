#!/usr/bin/env bash
# Everything the workbench checks on a GPU, on the device machine, in the
# repository root, with the core wheels carried (".whl"; add ".whl-bench" for
# the benchmarks):
#
#   bash scripts/gpu_check.sh                       # PARTS="tests exact timing"
#   PARTS="recover bench" bash scripts/gpu_check.sh
#
# Parts (each capped by a timeout in seconds, so a call ends inside the
# device's 10-minute command limit):
#   tests    the whole pytest suite, GPU tests included            TESTS_S (300)
#   exact    scripts/exactness.py: every GPU backend vs cpu and
#            cpu vs TLS fused, shipped + seeded synthetic curves    EXACT_S (300)
#   timing   scripts/gpu_timing.py: cold/warm per backend + TLS     TIMING_S (180)
#   recover  python -m validation.recover --suite quick, per GPU
#            backend in RECOVER_BACKENDS (default "simple")          RECOVER_S (240)
#   suites   scripts/gpu_suites.sh: python -m validation.recover --suite
#            SUITE (all) for RECOVER_BACKENDS (default every GPU backend)
#            against the carried CPU TLS pack (see its header)       SUITES_S (480)
#   big      scripts/big_search.py: 100,000 points x ~101,000 periods,
#            backends in BIG_BACKENDS (default "pruned")              BIG_S (300)
#   multigpu scripts/multigpu_scaling.py: MULTIGPU_N (1200) K2-like curves
#            through python -m validation.batch on 1 and 2 GPUs, backends
#            MULTIGPU_BACKENDS ("simple"); carry ".whl-dask"          MULTIGPU_S (330)
#   throughput  scripts/throughput.py: K2-like light curves per second (packed
#            search_many, search_batch, one by one, CPU TLS), THROUGHPUT_N
#            curves (64), THROUGHPUT_GRIDS ("full short": period_max=10) THROUGHPUT_S (300 each)
#   profile  Nsight Compute on PROFILE_BACKEND's kernels (pruned; e.g. tensor) in
#            one warm search of each case in PROFILE_CASES ("k2 tess";
#            scripts/profile_pruned.py):
#            time, pipes, FP32/FP64 share of peak (roofline), instruction
#            mix, stalls, occupancy -> ncu_<case>.txt             PROFILE_S (240 each)
#   pipes    Nsight Compute's pipe utilisation (tensor, FP64, FMA, ALU, shared
#            memory ... as % of peak) and instruction counts per pipe of
#            PROFILE_BACKEND's kernels in one warm search of each case in
#            PROFILE_CASES (the metrics this GPU has, from ncu --query-metrics)
#                                                  -> pipes_<case>.txt PROFILE_S
#   bench    scripts/gpu_bench.sh device: the asv plan (its header; ~7 min
#            on H200), variant table, figure -> bench_reports.tar.gz BENCH_S (540)
# Logs and results (header with GPU, commit and date; one folder per part)
# are packed into gpu_check.tar.gz in $OUT (reports/gpu/latest without it):
# the device returns at most 8 files per call.
set -o pipefail
DEST=${OUT:-reports/gpu/latest}
OUT=$(mktemp -d)
mkdir -p "$DEST"
source "$(dirname "$0")/gpu_env.sh"
install_wheels .whl/*.whl $(ls .whl-bench/*.whl .whl-dask/*.whl 2>/dev/null) || exit 1
{
    gpu_header
    echo "processes allowed: $(ulimit -u) (cgroup: $(cat /sys/fs/cgroup/pids.max 2>/dev/null))"
    python3 -c "import numpy, numba, cupy, pycuda; print('numpy', numpy.__version__, 'numba', numba.__version__, \
'cupy', cupy.__version__, 'pycuda', pycuda.VERSION_TEXT)"
} 2>&1 | tee "$OUT/header.txt"

GPU_BACKENDS="pruned tensor basic simple thrust cupy numba"
PARTS=${PARTS:-tests exact timing}
rc=0
part() { [[ " $PARTS " == *" $1 "* ]]; }
part tests && { timeout "${TESTS_S:-300}" python3 -m pytest -m "gpu or not gpu" -q -p no:cacheprovider \
    -n 8 2>&1 | tee "$OUT/tests.log" || rc=1; }
part exact && { timeout "${EXACT_S:-300}" python3 scripts/exactness.py --backends $GPU_BACKENDS \
    --synthetic "${SYNTHETIC:-12}" --big --out "$OUT/exactness" 2>&1 | tee "$OUT/exactness.log" || rc=1; }
part timing && { timeout "${TIMING_S:-180}" python3 scripts/gpu_timing.py --backends "${GPU_BACKENDS// /,}" \
    --tls k2,tess --out "$OUT/timing.json" \
    ${TIMING_ARGS:-} 2>&1 | tee "$OUT/timing.log" || rc=1; }
part recover && for b in ${RECOVER_BACKENDS:-simple}; do
    timeout "${RECOVER_S:-240}" python3 -m validation.recover --suite quick --backend "$b" \
        --out "$OUT/recover" 2>&1 | tee "$OUT/recover_$b.log" || rc=1
done
part suites && { RECOVER_BACKENDS=${RECOVER_BACKENDS:-$GPU_BACKENDS} bash scripts/gpu_suites.sh \
    "$OUT/suites" || rc=1; }
part big && { timeout "${BIG_S:-300}" python3 scripts/big_search.py --backends ${BIG_BACKENDS:-pruned} \
    --out "$OUT/big_search.json" 2>&1 | tee "$OUT/big_search.log" || rc=1; }
part multigpu && { timeout "${MULTIGPU_S:-330}" python3 scripts/multigpu_scaling.py --n "${MULTIGPU_N:-1200}" \
    --backends ${MULTIGPU_BACKENDS:-simple} --out "$OUT/multigpu" 2>&1 | tee "$OUT/multigpu.log" || rc=1; }
part throughput && for grid in ${THROUGHPUT_GRIDS:-full short}; do
    extra=(); [[ $grid == short ]] && extra=(--option period_max=10)
    timeout "${THROUGHPUT_S:-300}" python3 scripts/throughput.py --n "${THROUGHPUT_N:-64}" "${extra[@]}" \
        --out "$OUT/throughput_$grid.json" 2>&1 | tee "$OUT/throughput_$grid.log" || rc=1
done
part profile && for c in ${PROFILE_CASES:-k2 tess}; do
    timeout "${PROFILE_S:-240}" ncu -k "regex:${PROFILE_BACKEND:-pruned}" --section SpeedOfLight --section SpeedOfLight_RooflineChart \
        --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats \
        --section SchedulerStats --section WarpStateStats --section LaunchStats --section Occupancy \
        python3 scripts/profile_pruned.py --backend "${PROFILE_BACKEND:-pruned}" "$c" > "$OUT/ncu_$c.txt" 2>&1 || rc=1
done
part pipes && {
    # the names this GPU's counters go by (a regex in --metrics is refused: it
    # must match whole names, suffixes included)
    metrics=$(ncu --query-metrics 2>/dev/null | awk '
        $1 ~ /^sm__pipe_[a-z0-9_]+_cycles_active$/ {m = m $1 ".avg.pct_of_peak_sustained_active,"}
        $1 ~ /^sm__inst_executed_pipe_[a-z0-9_]+$/ {m = m $1 ".sum,"}
        END {print m "sm__cycles_active.avg,gpu__time_duration.sum"}')
    for c in ${PROFILE_CASES:-k2 tess}; do
        { echo "metrics: $metrics"
          timeout "${PROFILE_S:-240}" ncu -k "regex:${PROFILE_BACKEND:-pruned}" --metrics "$metrics" \
            python3 scripts/profile_pruned.py --backend "${PROFILE_BACKEND:-pruned}" "$c"; } > "$OUT/pipes_$c.txt" 2>&1 || rc=1
    done
}
part bench && { OUT=$OUT timeout "${BENCH_S:-540}" bash scripts/gpu_bench.sh device 2>&1 \
    | tee "$OUT/bench.log" || rc=1; }
echo "exit status: $rc (parts: $PARTS)" | tee -a "$OUT/header.txt"
tar -czf "$DEST/gpu_check.tar.gz" -C "$OUT" .
exit $rc
