#!/usr/bin/env bash
# Benchmarks on the offline GPU machine: the asv suite, the per-GPU variant
# table (python -m benchmarks.select) and the scaling figure, results into $OUT.
#
#   here (PyPI):   scripts/gpu_bench.sh fetch          # wheels -> .whl + .whl-bench (carry both)
#   GPU machine:   scripts/gpu_bench.sh all            # install + asv + select + figure
#                  scripts/gpu_bench.sh asv 'EndToEnd|Search'   # a part (asv -b regex)
#                  scripts/gpu_bench.sh select | figure
# Each part fits one 10-minute device command for a sweep chosen with
# TLS_BENCH_SIZES (full | medium | ci); results accumulate in reports/ and
# are packed into $OUT/bench_reports.tar.gz after every part.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS=.whl-bench  # benchmark-only wheels; the core ones (.whl) are shared with gpu_check.sh
SITE=/tmp/site

fetch() {
    mkdir -p "$WHEELS"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 -d "$WHEELS" \
        asv asv-runner json5 pympler virtualenv distlib "importlib-metadata<9" zipp \
        platformdirs filelock tabulate packaging build pyproject_hooks python-discovery pyyaml \
        transitleastsquares batman-package "numpy>=2.4,<2.5" \
        astropy pyerfa astropy-iers-data \
        pytools mako markupsafe siphash24 typing_extensions \
        gputls nvidia-ml-py cetra
    for f in "$WHEELS"/*.whl; do  # keep one copy of each: the core set lives in .whl
        [ -e ".whl/$(basename "$f")" ] && rm "$f"
    done
    du -sh .whl "$WHEELS"
}

install() {
    # numpy 2.4 first on the path: numba-cuda 0.30 breaks with the venv's numpy 2.5
    python3 -m pip install --quiet --no-index --no-deps --target "$SITE" .whl/*.whl "$WHEELS"/*.whl
}

env_setup() {
    # asv drops PYTHONPATH from sys.path in its benchmark processes: benchmarks/__init__.py
    # puts TLS_BENCH_PYTHONPATH back (ASV_PYTHONPATH lets asv_runner itself import)
    export PYTHONPATH="$SITE:$PWD" ASV_PYTHONPATH="$SITE" TLS_BENCH_PYTHONPATH="$SITE" PATH="$SITE/bin:/usr/local/cuda/bin:$PATH"
    MACHINE="gpu-$(python3 -c 'from backends.variants import gpu_name, slug; print(slug(gpu_name()))')"
    if ! git rev-parse HEAD >/dev/null 2>&1; then  # a copy without .git: a throwaway repo
        git init -q && git add -A >/dev/null && git -c user.name=bench -c user.email=bench@localhost \
            commit -qm "benchmark tree" >/dev/null
    fi
    python3 -m asv machine --yes --machine "$MACHINE" >/dev/null
}

run_asv() {
    python3 -m asv run --python=same --machine "$MACHINE" --set-commit-hash "$(git rev-parse HEAD)" \
        --show-stderr ${ASV_ARGS:-} ${1:+-b "$1"} || true  # failed benchmarks are recorded, not fatal
}

copy_out() {
    if [ -n "${OUT:-}" ]; then
        # one archive: the device returns files at most two folders down
        tar -czf "$OUT/bench_reports.tar.gz" $(ls -d reports/asv reports/variants reports/scaling.png 2>/dev/null)
    fi
}

case "${1:-all}" in
    fetch) fetch; exit ;;
    install) install; exit ;;
esac
[ -d "$SITE" ] || install
env_setup
case "${1:-all}" in
    asv) run_asv "${2:-}" ;;
    select) python3 -m benchmarks.select ;;
    figure) python3 -m benchmarks.figure "$MACHINE" ;;
    all) run_asv ""; python3 -m benchmarks.select; python3 -m benchmarks.figure "$MACHINE" ;;
    *) echo "usage: $0 fetch|install|asv [regex]|select|figure|all" >&2; exit 2 ;;
esac
copy_out
