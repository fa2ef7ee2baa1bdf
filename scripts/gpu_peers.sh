#!/usr/bin/env bash
# The peers (backends.peers: GTLS, CETRA) on the device machine, in the
# repository root, with ".whl" and ".whl-bench" carried:
#
#   bash scripts/gpu_peers.sh                      # PARTS="diagnose quick"
#   PARTS=quick PEERS=peer:cetra bash scripts/gpu_peers.sh
#
# Wheels it expects beside the core ones in .whl/ (numpy 2.4, transitleastsquares,
# batman, pycuda, pytools, mako, markupsafe, platformdirs, siphash24,
# typing_extensions, astropy): in .whl-bench/
#   gputls-0.4.4-py3-none-any.whl          GTLS (needs cupy from the machine's venv, numba, batman)
#   nvidia_ml_py-*.whl                     the pynvml module GTLS imports
#   cetra-1.0-py3-none-any.whl             CETRA (needs pycuda, scipy, tqdm)
# (cuvarbase is not a peer: its published package, 0.2.5, has no TLS.)
#
# Parts (each capped by a timeout in seconds):
#   diagnose  scripts/peer_diagnosis.py: every peer and CPU TLS on K2-3, K2-140 and
#             WASP-126 with period_max 20; GTLS called several ways (its own grid,
#             as the workbench calls it, without dy, median-normalised, with its
#             first-pass kernel patched) with what its chi2 and SDE spectrum hold;
#             CETRA alone, after CuPy's Device.use(), after GTLS and after the
#             workbench's PyCUDA backend in one process               DIAGNOSE_S (420)
#   quick     python -m validation.recover --suite quick --backend P for each
#             peer P in PEERS (default "peer:gtls peer:cetra"), one CPU TLS cache
#             (exit status 1 when a peer misses cases is expected)   QUICK_S (240 each)
# Everything lands in gpu_peers.tar.gz in $OUT (reports/gpu/latest without it).
set -o pipefail
DEST=${OUT:-reports/gpu/latest}
OUT=$(mktemp -d)
mkdir -p "$DEST"
for wheel in gputls-0.4.4 cetra-1.0; do
    ls .whl-bench/$wheel-*.whl >/dev/null 2>&1 || echo "warning: .whl-bench/$wheel-*.whl is missing" | tee -a "$OUT/header.txt"
done
source "$(dirname "$0")/gpu_env.sh"
install_wheels .whl/*.whl .whl-bench/*.whl || exit 1
{
    gpu_header
    python3 -c "import backends; [print(f'{k}: {v or \"can run\"}') for k, v in backends.available_backends().items() if k.startswith('peer:')]"
} 2>&1 | tee -a "$OUT/header.txt"

PARTS=${PARTS:-diagnose quick}
rc=0
part() { [[ " $PARTS " == *" $1 "* ]]; }
part diagnose && { timeout "${DIAGNOSE_S:-420}" python3 scripts/peer_diagnosis.py --period-max 20 \
    --out "$OUT/diagnosis" 2>&1 | tee "$OUT/diagnosis.log" || rc=1; }
part quick && for peer in ${PEERS:-peer:gtls peer:cetra}; do
    timeout -s INT -k 30 "${QUICK_S:-240}" python3 -m validation.recover --suite quick --backend "$peer" \
        --out "$OUT/recover" 2>&1 | tee "$OUT/recover_${peer/:/-}.log"
    status=$?
    [[ $status == 0 || $status == 1 ]] || rc=1  # 1: the peer misses cases CPU TLS finds (a result)
done
echo "exit status: $rc (parts: $PARTS)" | tee -a "$OUT/header.txt"
tar -czf "$DEST/gpu_peers.tar.gz" -C "$OUT" .
