#!/usr/bin/env bash
# Issue 13's measurements on the GPU machine, in the repository root, with the
# wheels carried (".whl" and ".whl-dask"):
#
#   PARTS=throughput bash scripts/gpu_throughput.sh     # ~5 min on an H100
#   PARTS=survey bash scripts/gpu_throughput.sh         # ~4-8 min: 10,000 curves
#   PARTS=scaling bash scripts/gpu_throughput.sh        # on a 2-GPU machine
#
# Parts (each under its timeout in seconds; one call each keeps a call inside
# the device's 10-minute limit):
#   throughput  scripts/throughput.py on THROUGHPUT_N (64) K2-like curves for each
#               of THROUGHPUT_BACKENDS ("simple pruned"): packed statistics,
#               search_batch end to end (full, lean), host CPU ms per curve,
#               the targets                                   THROUGHPUT_S (270 each)
#   survey      scripts/multigpu_scaling.py: SURVEY_N (10000) K2-like curves through
#               python -m validation.batch on one GPU, SURVEY_BACKEND (pruned) with
#               SURVEY_WORKERS (4) Dask workers on it: rate, GPU use sampled each
#               second, peak GPU and host memory, cost per million curves at
#               USD_PER_GPU_HOUR (3.00); SURVEY_MPS=1: the workers under
#               an NVIDIA MPS daemon of its own (validation/mps.py)  SURVEY_S (540)
#   scaling     the same, SCALING_N (2000) curves, on 1 and 2 GPUs   SCALING_S (540)
# survey and scaling pass --stall-dump STALL_DUMP_S (30): a worker whose batch
# runs that long writes its threads' stacks into the run's log (<run>.log).
# Everything lands in $OUT (reports/host_path/latest without it): header.txt,
# summary.md (scripts/host_path_report.py: the table for reports/host_path/)
# and host_path.tar.gz (every log and JSON).
set -o pipefail
DEST=${OUT:-reports/host_path/latest}
WORK=$(mktemp -d)
mkdir -p "$DEST"
source "$(dirname "$0")/gpu_env.sh"
install_wheels .whl/*.whl $(ls .whl-dask/*.whl 2>/dev/null) || exit 1
gpu_header 2>&1 | tee "$WORK/header.txt"

PARTS=${PARTS:-throughput}
USD=${USD_PER_GPU_HOUR:-3.00}
rc=0
part() { [[ " $PARTS " == *" $1 "* ]]; }
part throughput && for b in ${THROUGHPUT_BACKENDS:-simple pruned}; do
    timeout "${THROUGHPUT_S:-270}" python3 scripts/throughput.py --backend "$b" --n "${THROUGHPUT_N:-64}" \
        --workers 1 4 --out "$WORK/throughput_$b.json" 2>&1 | tee "$WORK/throughput_$b.log" || rc=1
done
part survey && { timeout "${SURVEY_S:-540}" python3 scripts/multigpu_scaling.py --n "${SURVEY_N:-10000}" \
    --backends "${SURVEY_BACKEND:-pruned}" --runs "1:distributed:${SURVEY_WORKERS:-4}" \
    --timeout "$(( ${SURVEY_S:-540} - 90 ))" --usd-per-gpu-hour "$USD" --work /tmp/survey \
    --stall-dump "${STALL_DUMP_S:-30}" ${SURVEY_MPS:+--mps} \
    --out "$WORK/survey" 2>&1 | tee "$WORK/survey.log" || rc=1; }
part scaling && { timeout "${SCALING_S:-540}" python3 scripts/multigpu_scaling.py --n "${SCALING_N:-2000}" \
    --backends "${SURVEY_BACKEND:-pruned}" --runs "1:distributed:${SURVEY_WORKERS:-4}" \
    "2:distributed:${SURVEY_WORKERS:-4}" --timeout 200 --usd-per-gpu-hour "$USD" --work /tmp/scaling \
    --stall-dump "${STALL_DUMP_S:-30}" \
    --out "$WORK/scaling" 2>&1 | tee "$WORK/scaling.log" || rc=1; }
python3 scripts/host_path_report.py "$WORK" | tee "$WORK/summary.md"
echo "exit status: $rc (parts: $PARTS)" | tee -a "$WORK/header.txt"
cp "$WORK/header.txt" "$WORK/summary.md" "$DEST/"
tar -czf "$DEST/host_path.tar.gz" -C "$WORK" .
exit $rc
