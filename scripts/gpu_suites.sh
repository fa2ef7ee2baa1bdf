#!/usr/bin/env bash
# gpu_check.sh part "suites": the validation suite SUITE (default all) for every
# backend in RECOVER_BACKENDS against one CPU TLS cache, inside SUITES_S seconds.
#
#   bash scripts/gpu_suites.sh DEST
#
# 1. unpacks the carried CPU TLS pack TLS_PACK (python -m validation.tlscache pack;
#    default reports/cache/tls_pack_$SUITE.npz) into WORK (default reports/cache/device,
#    ignored, kept between calls on a warm machine);
# 2. FILL=1 (default): computes the CPU TLS records the pack lacks, on every core
#    (with a full pack, a minute: it also compiles numba's on-disk cache once, before
#    the backends' processes load it at once);
# 3. runs python -m validation.recover for the backends at once, RECOVER_JOBS
#    processes each (default 3), one CPU thread each; the GPU is shared, so their
#    runtimes are not benchmarks (scripts/gpu_timing.py is);
# 4. copies the reports (CSV, Parquet, markdown, figures), the logs and a pack of
#    the cache (with what step 2 added) to DEST.
# Past the deadline each step is interrupted and keeps what it finished: the
# same call again resumes. Exit status: 1 if any step failed or was cut short.
set -o pipefail
DEST=${1:?usage: gpu_suites.sh DEST}
SUITE=${SUITE:-all}
WORK=${WORK:-reports/cache/device}
TLS_PACK=${TLS_PACK:-reports/cache/tls_pack_$SUITE.npz}
BACKENDS=${RECOVER_BACKENDS:-basic simple thrust cupy numba}
PYTHON=${PYTHON:-python3}
deadline=$((SECONDS + ${SUITES_S:-480}))
left() { echo $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)); }
source "$(dirname "$0")/gpu_env.sh"
mkdir -p "$DEST/figures" "$WORK"
rc=0
log() { echo "$(date -u +%T) $*" | tee -a "$DEST/suites.txt"; }

if [[ -f $TLS_PACK ]]; then
    "$PYTHON" -m validation.tlscache unpack "$TLS_PACK" --out "$WORK" 2>&1 | tee -a "$DEST/suites.txt" || rc=1
else
    log "no CPU TLS pack at $TLS_PACK: CPU TLS runs here for every case"
fi
if [[ ${FILL:-1} == 1 ]]; then
    timeout -s INT -k 30 "$(left)" "$PYTHON" -m validation.tlscache fill --suite "$SUITE" \
        --jobs "$(nproc)" --out "$WORK" > "$DEST/fill.log" 2>&1
    status=$?
    log "fill: exit $status after ${SECONDS}s: $(tail -n 1 "$DEST/fill.log")"
    [[ $status == 0 ]] || rc=1
fi
if (( deadline - SECONDS < 60 )); then
    log "no time left for the backends: run the same call again"
    BACKENDS="" rc=1
fi
declare -A pids
for b in $BACKENDS; do
    timeout -s INT -k 30 "$(left)" "$PYTHON" -m validation.recover --suite "$SUITE" --backend "$b" \
        --jobs "${RECOVER_JOBS:-3}" --threads 1 --out "$WORK" > "$DEST/recover_$b.log" 2>&1 &
    pids[$b]=$!
done
for b in $BACKENDS; do
    wait "${pids[$b]}"
    status=$?
    log "recover $b: exit $status after ${SECONDS}s (0 pass, 1 verdict failed, 3 a worker died, 130/124 cut short: resume)"
    [[ $status == 0 || $status == 1 ]] || rc=1
done
cp "$WORK"/recover_"$SUITE"_*.{csv,parquet,md} "$DEST"/ 2>/dev/null
cp "$WORK"/figures/recover_"$SUITE"_*.png "$DEST"/figures/ 2>/dev/null
"$PYTHON" -m validation.tlscache pack --suite "$SUITE" --out "$WORK" --to "$DEST/tls_pack_$SUITE.npz" \
    2>&1 | tee -a "$DEST/suites.txt" || rc=1
exit $rc
