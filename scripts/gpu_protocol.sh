#!/usr/bin/env bash
# The detection protocol (python -m validation.protocol; README "Detection protocol")
# for every cadence on the GPU machine, resumable over device calls, run in the
# repository root with the core wheels carried (".whl"):
#
#   bash scripts/gpu_protocol.sh                                             # first call
#   RESUME_FROM=reports/cache/protocol.tar.gz bash scripts/gpu_protocol.sh   # the next ones
#
# 1. installs .whl/*.whl into /tmp/site (numpy 2.4 first on PYTHONPATH), if carried;
# 2. unpacks RESUME_FROM (the protocol.tar.gz a previous call left in $OUT: journals,
#    CPU TLS cache, report) into WORK (default /tmp/protocol), and the CPU TLS pack
#    TLS_PACK (python -m validation.tlscache pack; default
#    reports/cache/protocol_tls_pack.npz), if there, into WORK's cache;
# 3. runs the protocol with BACKEND (pruned), CADENCE (all), sizes CALIBRATION,
#    INJECTIONS, TEST_NULLS (1000 each), REFERENCE_SUBSET (100), JOBS processes (nproc),
#    for at most PROTOCOL_S seconds (480); the report covers what is done;
# 4. leaves in DEST ($OUT, else reports/gpu/latest): protocol.tar.gz (WORK whole, a few
#    MB: the next call's RESUME_FROM), the report (.md, .json, _summary.csv, the two
#    figures) and protocol.log.
# Exit status: the protocol's (0 pass, 1 fail, 4 incomplete: call again with
# RESUME_FROM, 3 a worker died, 2 bad arguments).
set -o pipefail
DEST=${OUT:-reports/gpu/latest}
WORK=${WORK:-/tmp/protocol}
BACKEND=${BACKEND:-pruned}
PYTHON=${PYTHON:-python3}
TLS_PACK=${TLS_PACK:-reports/cache/protocol_tls_pack.npz}
mkdir -p "$DEST" "$WORK"
log() { echo "$(date -u +%T) $*" | tee -a "$DEST/protocol.log"; }

source "$(dirname "$0")/gpu_env.sh"
if compgen -G ".whl/*.whl" > /dev/null; then
    install_wheels .whl/*.whl || exit 2
fi
gpu_header 2>&1 | tee -a "$DEST/protocol.log"
if [[ -n ${RESUME_FROM:-} ]]; then
    tar -xzf "$RESUME_FROM" -C "$WORK" || { log "cannot unpack RESUME_FROM=$RESUME_FROM"; exit 2; }
    log "resumed from $RESUME_FROM"
fi
if [[ -f $TLS_PACK ]]; then
    "$PYTHON" -m validation.tlscache unpack "$TLS_PACK" --out "$WORK" 2>&1 | tee -a "$DEST/protocol.log"
fi
"$PYTHON" -m validation.protocol --backend "$BACKEND" --cadence "${CADENCE:-all}" \
    --calibration "${CALIBRATION:-1000}" --injections "${INJECTIONS:-1000}" \
    --test-nulls "${TEST_NULLS:-1000}" --reference-subset "${REFERENCE_SUBSET:-100}" \
    --jobs "${JOBS:-$(nproc)}" --threads 1 --max-seconds "${PROTOCOL_S:-480}" --out "$WORK" \
    2>&1 | tee -a "$DEST/protocol.log"
rc=$?
log "protocol: exit $rc (0 pass, 1 fail, 4 incomplete: call again with RESUME_FROM=<protocol.tar.gz>)"
tar -czf "$DEST/protocol.tar.gz" -C "$WORK" .
cp "$WORK"/protocol_"$BACKEND"*.{md,json} "$WORK"/protocol_"$BACKEND"*_summary.csv \
    "$WORK"/figures/protocol_"$BACKEND"*.png "$DEST"/ 2>/dev/null
log "archive $(du -h "$DEST/protocol.tar.gz" | cut -f1), journals $(du -sh "$WORK/cache" | cut -f1)"
exit $rc
