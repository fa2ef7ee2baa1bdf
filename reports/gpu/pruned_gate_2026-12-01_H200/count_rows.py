"""The instructions of row_gate's rows loop in pruned_period's SASS (all its
paths), from a disassembly made by step 83's ``sass_chain.py build``:

    export NVDISASM=/path/to/nvdisasm
    python ../pruned_coarse_k_2026-11-29c_H200/sass_chain.py build /tmp/base   # the installed checkout's pruned.cu
    python count_rows.py /tmp/base.sass                                          # 248 at c66df95; 214 with
                                                                                 # row_gate_lean.patch applied
"""
import re
import sys


def rows_loop(path):
    """The loop's instructions: from the label of the first backward branch past
    sqrt_above's MUFU.RSQ (the gate's bound has the kernel's only one) and the mask's vote."""
    lines = open(path).read().splitlines()
    rsq = next(k for k, line in enumerate(lines) if "MUFU.RSQ " in line)
    labels = {line[1:-1]: k for k, line in enumerate(lines) if re.match(r"\.L_x_\d+:$", line)}
    for j in range(rsq, len(lines)):
        m = re.search(r"BRA `\(\.(L_x_\d+)\)", lines[j])
        if m and labels[m.group(1)] < rsq and "VOTE" in "".join(lines[rsq:j]):
            return [x for x in lines[labels[m.group(1)]:j + 1] if re.match(r"\s+/\*[0-9a-f]+\*/", x)]
    raise SystemExit(f"{path}: no rows loop found")


if __name__ == "__main__":
    for path in sys.argv[1:]:
        print(f"{path}: rows loop instructions (all paths): {len(rows_loop(path))}")
