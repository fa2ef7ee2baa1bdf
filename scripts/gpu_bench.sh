#!/usr/bin/env bash
# Benchmarks: the asv suite, the per-GPU variant table and the scaling figure
# on the offline GPU machine, packed into $OUT/bench_reports.tar.gz; and, here,
# the step that brings that archive into reports/.
#
#   here (PyPI):   scripts/fetch_wheels.sh               # wheels -> .whl + .whl-bench (carry both)
#   GPU machine:   scripts/gpu_bench.sh device           # the whole plan below, ~7 min on H200
#                  scripts/gpu_bench.sh asv 'EndToEnd|Search'   # one asv run (-b regex)
#                  scripts/gpu_bench.sh select | figure
#   here:          scripts/gpu_bench.sh publish gpu_check.tar.gz [COMMIT]
#
# The device plan (reports/asv/README.md has its time estimates): asv steps in
# priority order, each under its cap and none started past BENCH_DEADLINE
# seconds (default 450), results packed after each:
#   1. EndToEnd warm, then TLS's peers: the whole ndata x nperiods grid (work
#      budgets in benchmarks/cases.py skip what would not fit); the variant
#      table from those results and the scaling figure
#   2. Accuracy and tensor's work counters (TensorWork) on BENCH_MEMORY_CASES
#   3. HostStages (grid) and Upload/FoldSort/Chi2Scan/Search on BENCH_STAGE_CASES
#   4. GPUMemory on BENCH_MEMORY_CASES; ColdStart on BENCH_COLD_CASES
#   5. The BLS peer, the GPU peers, PeerAccuracy
#   Asked for only (BENCH_STEPS="throughput ..."): issue 13's Throughput tracks of
#   tensor (packed, end to end, lean, their ratio; 64 K2-like curves)
# Cases are asv parameter regexes, e.g. "4320, 10000|20000, 10000".
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=.whl-bench  # benchmark-only wheels; the core ones (.whl) are shared with gpu_check.sh
SITE=${BENCH_SITE:-/tmp/site}

install() {
    # numpy 2.4 first on the path: numba-cuda 0.30 breaks with the venv's numpy 2.5
    python3 -m pip install --quiet --no-index --no-deps --target "$SITE" .whl/*.whl "$WHEELS"/*.whl
}

publish() {
    # The archive from the device (gpu_check.tar.gz or bench_reports.tar.gz) into
    # reports/: asv results under the device's commit (COMMIT, else the one it
    # recorded; the device's tree is a throwaway repository), the variant table
    # and the README's (where its marker names this GPU) from those results, the
    # scaling figure; then asv's HTML (.asv/html, ignored) and the regression check.
    local tmp machine gpu
    tmp=$(mktemp -d)
    tar -xzf "$1" -C "$tmp"
    [ -f "$tmp/bench_reports.tar.gz" ] && tar -xzf "$tmp/bench_reports.tar.gz" -C "$tmp"
    local commit=${2:-$(cat "$tmp/.asv/commit.txt" 2>/dev/null || true)}
    commit=$(git rev-parse --verify "${commit:?give the commit the device ran}^{commit}")
    python3 scripts/bench_import.py "$tmp/reports/asv/results" "$commit"
    for machine in "$tmp"/reports/asv/results/gpu-*/; do
        machine=$(basename "$machine")
        # only the GPUs this run measured: the archive holds the committed results of the others
        compgen -G "reports/asv/results/$machine/${commit:0:8}-*.json" > /dev/null || continue
        gpu=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["gpu"])' \
            "$tmp/backends/data/variants/${machine#gpu-}.json")
        python3 -m benchmarks.select --asv "$machine" --gpu "$gpu"
        python3 -m benchmarks.figure "$machine"
    done
    rm -rf "$tmp"
    python3 -m asv publish  # HTML into .asv/html (ignored)
    python3 scripts/bench_regress.py
}

case "${1:-device}" in
    install) install; exit ;;
    publish) publish "$2" "${3:-}"; exit ;;
esac
[ -d "$SITE" ] || install

# asv drops PYTHONPATH from sys.path in its benchmark processes: benchmarks/__init__.py
# puts TLS_BENCH_PYTHONPATH back (ASV_PYTHONPATH lets asv_runner itself import)
export PYTHONPATH="$SITE:$PWD" ASV_PYTHONPATH="$SITE" TLS_BENCH_PYTHONPATH="$SITE" PATH="$SITE/bin:/usr/local/cuda/bin:$PATH"
MACHINE=${BENCH_MACHINE:-gpu-$(python3 -c 'from backends.variants import gpu_name, slug; print(slug(gpu_name()))')}
# The device's copy of the tree may carry an old .git: commit the tree as it is
# (a hash unknown here, which `publish` files under the commit that ran)
git rev-parse HEAD >/dev/null 2>&1 || git init -q -b main
git add -A >/dev/null && git -c user.name=bench -c user.email=bench@localhost \
    commit -q --allow-empty -m "benchmark tree" >/dev/null
python3 -m asv machine --yes --machine "$MACHINE" >/dev/null

run_asv() {  # run_asv SECONDS REGEX...: one asv run (forkserver: the suite is imported once)
    local cap=$1 regex args=()
    shift
    for regex in "$@"; do args+=(-b "$regex"); done
    timeout "$cap" python3 -m asv run --python=same --launch-method forkserver --machine "$MACHINE" \
        --set-commit-hash "$(git rev-parse HEAD)" --show-stderr --durations all ${ASV_ARGS:-} \
        "${args[@]}" || true  # failed benchmarks are recorded, not fatal
}

copy_out() {
    if [ -n "${OUT:-}" ]; then
        # one archive: the device returns files at most two folders down
        mkdir -p .asv && echo "${COMMIT:-}" > .asv/commit.txt
        tar -czf "$OUT/bench_reports.tar.gz" .asv/commit.txt \
            $(ls -d reports/asv reports/variants backends/data/variants reports/scaling.png 2>/dev/null)
    fi
}

plan() {
    local start=$SECONDS cap
    step() {  # step NAME CAP REGEX...: if NAME is in BENCH_STEPS, run_asv within its cap and the deadline, then pack
        [[ " ${BENCH_STEPS:-exact others fast peers accuracy stages memory cold gpu-peers peer-accuracy} " == *" $1 "* ]] \
            || return 0
        cap=$(( ${BENCH_DEADLINE:-450} - (SECONDS - start) ))
        (( cap > 20 )) || { echo "== skipped, past the deadline: $*"; return; }
        local own="BENCH_CAP_${1//-/_}"  # e.g. BENCH_CAP_stages=300 for more cases than the default
        (( cap < ${!own:-$2} )) || cap=${!own:-$2}
        shift 2
        echo "== $(date -u +%T) asv (cap ${cap} s): $*"
        run_asv "$cap" "$@"
        copy_out
    }
    # Small steps: asv saves a run's results only when it ends, so a step cut
    # at its cap loses only itself. Fast GPU backends first.
    local e2e='^bench_search\.EndToEnd\.time_search_warm' k2="${BENCH_STAGE_CASES:-4320, 10000}"
    step exact 200 "$e2e\('(pruned|tensor|basic)'"  # the variant table is of exact backends
    local backend  # one asv run each: at 2a8d879 the three in one run passed its 150 s cap and lost all three
    for backend in cupy numba cpu; do step others 80 "$e2e\('$backend'"; done
    step fast 100 "$e2e\('(simple|thrust)'"  # approximate: timed, not in the table
    local peer  # one asv run per peer: one that hangs or runs long loses only itself
    for peer in tls-fused tls-default; do step peers 100 "^bench_peers\.Peers\.time_peer\('$peer'"; done
    python3 -m benchmarks.select --asv "$MACHINE" || true
    python3 -m benchmarks.figure "$MACHINE" || true
    # our tracks before the slower peers: at c5bf92b (H200) a whole plan reached none of them by the deadline
    local cases="${BENCH_MEMORY_CASES:-500, 1000|4320, 10000}"
    step accuracy 90 "^bench_(search\.Accuracy|work\.TensorWork)\..*, ($cases)\)$"
    step throughput 150 "^bench_host\.Throughput\..*\('tensor'\)$"
    step stages 60 "^bench_stages\.(HostStages|Upload|FoldSort|Chi2Scan|Search)\..*[(, ]($k2)\)$"
    step memory 60 "^bench_search\.GPUMemory\..*, ($cases)\)$"
    step cold 60 "^bench_search\.ColdStart\..*, (${BENCH_COLD_CASES:-4320, 10000})\)$"
    step peers 100 "^bench_peers\.Peers\.time_peer\('bls'"
    for peer in gtls cetra; do step gpu-peers 150 "^bench_peers\.Peers\.time_peer\('$peer'"; done
    step peer-accuracy 100 "^bench_peers\.PeerAccuracy\."
    echo "== $(date -u +%T) plan done in $(( SECONDS - start )) s"
}

case "${1:-device}" in
    device) plan ;;
    asv) run_asv "${BENCH_S:-300}" "${2:-.}" ;;
    select) python3 -m benchmarks.select ;;
    figure) python3 -m benchmarks.figure "$MACHINE" ;;
    *) echo "usage: $0 install|device|asv [regex]|select|figure|publish ARCHIVE [COMMIT]" >&2; exit 2 ;;
esac
copy_out
