#!/usr/bin/env bash
# On the device machine, in the repository root, with .whl carried and the
# cubins of `python scripts/gpu_scan_variants.py build bench_cubins --ref-src DIR`
# in the tree: times every scan variant, then Nsight Compute on one launch of
# the variants named in PROFILE. Logs go to $OUT.
set -o pipefail
OUT=${OUT:-reports/gpu}
CUBINS=${CUBINS:-bench_cubins}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PATH=/usr/local/cuda/bin:$PATH PYTHONUNBUFFERED=1
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: ${COMMIT:-unknown}"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
} | tee "$OUT/header.txt"
python3 scripts/gpu_scan_variants.py time "$CUBINS" --out "$OUT/variants.json" 2>&1 | tee "$OUT/variants.log"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ -n "${PROFILE:-}" ]; then
    timeout 200 "$NCU" --clock-control none --kernel-name regex:"simple_search|thrust_scan" \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
        --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats \
        python3 scripts/gpu_scan_variants.py profile "$CUBINS" $PROFILE > "$OUT/ncu.txt" 2>&1
    grep -E "simple_search|thrust_scan|Duration|Registers Per|Achieved Occupancy|Theoretical Occ|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Compute \(SM\) Th|Block Limit" "$OUT/ncu.txt" | sed 's/  */ /g'
    grep -oE "each warp of this kernel spends [0-9.]+ cycles being stalled [^.(]*" "$OUT/ncu.txt"
fi
tail -n 18 "$OUT/variants.log"
