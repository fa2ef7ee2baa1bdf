#!/usr/bin/env bash
# The wheels the offline GPU machine needs (../shared/device.md), fetched here
# from PyPI into the three ignored folders that `run`'s carry names; each
# session's checkout starts without them:
#
#   bash scripts/fetch_wheels.sh           # .whl (core), .whl-bench, .whl-dask
#   bash scripts/fetch_wheels.sh core      # one set
#
#   .whl        what gpu_check.sh needs: numpy 2.4 (numba-cuda 0.30 fails on the
#               venv's 2.5), PyCUDA (../shared/wheels), TLS, batman and their
#               missing dependencies
#   .whl-bench  asv and the benchmark peers (CETRA's wheel, over 64 MiB with
#               the rest, is left out)
#   .whl-dask   Dask's distributed for validation.batch and the survey, with
#               its dependencies less those the device's venv already holds
set -euo pipefail
cd "$(dirname "$0")/.."
download() {  # FOLDER [pip download arguments]
    local dest=$1; shift
    mkdir -p "$dest"
    python3 -m pip download --quiet --only-binary=:all: --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux_2_17_x86_64 -d "$dest" "$@"
}

core() {
    download .whl --no-deps "numpy>=2.4,<2.5" transitleastsquares batman-package \
        pytools mako markupsafe siphash24 typing_extensions platformdirs \
        astropy pyerfa astropy-iers-data
    cp ../shared/wheels/pycuda-*.whl .whl/
}

bench() {
    download .whl-bench --no-deps asv asv-runner json5 pympler virtualenv distlib "importlib-metadata<9" zipp \
        platformdirs filelock tabulate packaging build pyproject_hooks python-discovery pyyaml \
        gputls nvidia-ml-py
    dedupe .whl-bench
}

dask() {
    download .whl-dask dask distributed "importlib-metadata<9"  # the version asv needs
    # in the device's venv already (../shared/device.md), or too big to carry
    rm -f .whl-dask/{numpy,pandas,pyarrow,scipy,matplotlib,numba,llvmlite,tqdm,rich}-*.whl
    dedupe .whl-dask
}

dedupe() {  # a wheel .whl holds too is carried once
    local f
    for f in "$1"/*.whl; do
        [ -e ".whl/$(basename "$f")" ] && rm "$f"
    done
    return 0
}

for set in ${@:-core bench dask}; do
    case $set in
        core | bench | dask) "$set" ;;
        *) echo "usage: $0 [core] [bench] [dask] (unknown set: $set)" >&2; exit 2 ;;
    esac
done
du -sh .whl .whl-bench .whl-dask 2>/dev/null
