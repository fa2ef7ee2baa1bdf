#!/bin/bash
# The instructions of row_gate's rows loop in pruned_period's SASS (all paths), for the checkout at $1:
#   NVDISASM=/path/to/nvdisasm bash count_rows.sh /work/main
# (nvdisasm: pip download --no-deps nvidia-cuda-nvdisasm, unzip; nvcc compiles for sm_90 as pruned.py does).
set -e
ROOT=$(cd "$1" && pwd) OUT=$(mktemp -d)
PYTHONPATH=$ROOT python3 - "$OUT/pruned.cubin" "$ROOT" <<'PY'
import os, subprocess, sys
from backends.kernel_cache import CUDA_DIR, nvcc_command
from backends.implementations.pruned import PrunedBackend, SHARED_BLOCK
defines = {"BLOCK": SHARED_BLOCK, **PrunedBackend().kernel_defines(SHARED_BLOCK)}
here = os.path.join(sys.argv[2], "backends", "cuda")  # the checkout's sources, whichever backends is imported
cmd = [x.replace(str(CUDA_DIR), here) for x in nvcc_command("pruned.cu", "sm_90", defines, (), sys.argv[1])]
subprocess.run(cmd, check=True, capture_output=True)
PY
"${NVDISASM:-nvdisasm}" -c "$OUT/pruned.cubin" | awk '/\.text\.pruned_period:/,/\.text\.pruned_scan:|\.text\.pruned_seed:/' \
    > "$OUT/pruned_period.sass"
python3 - "$OUT/pruned_period.sass" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
rsq = next(k for k, line in enumerate(lines) if "MUFU.RSQ " in line)  # sqrt_above: in the gate's bound only
labels = {line[1:-1]: k for k, line in enumerate(lines) if re.match(r"\.L_x_\d+:$", line)}
for j in range(rsq, len(lines)):  # the first backward branch past the mask's vote: the rows loop's
    m = re.search(r"BRA `\(\.(L_x_\d+)\)", lines[j])
    if m and labels[m.group(1)] < rsq and "VOTE" in "".join(lines[rsq:j]):
        body = [x for x in lines[labels[m.group(1)]:j + 1] if re.match(r"\s+/\*[0-9a-f]+\*/", x)]
        print("rows loop instructions (all paths):", len(body))
        break
PY
