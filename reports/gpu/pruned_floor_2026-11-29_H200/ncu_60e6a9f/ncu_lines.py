"""Stall samples and warp instructions of one ncu profile of ``pruned_period``, by CUDA source line and by
innermost function.

ncu's source page gives only the SASS instructions here (``--print-source cuda`` printed the source with no
metrics), so the lines come from a build of the same source made here:

    nvcc ... -lineinfo -cubin (backends.kernel_cache.nvcc_command("pruned.cu", "sm_90", defines of BLOCK 512))
    nvdisasm -g -c k.cubin > all.sass       # nvdisasm: the nvidia-cuda-nvdisasm wheel
    python ncu_lines.py all.sass src_sass.csv.gz ../../../../backends/cuda/pruned.cu [N]

The script checks that both builds have the same instruction count and opcodes before it pairs them.
"""
import collections
import csv
import gzip
import re
import sys


def paired_rows(sass_path, csv_path):
    """(ncu's column names -> index, [(source line, ncu's row)]) of ``pruned_period``: ncu's SASS rows paired
    with the local build's, after checking their count and opcodes; a line is an int for pruned.cu, else
    "file:line"."""
    text = open(sass_path).read()
    text = text[text.index(".text.pruned_period:"):]
    text = text[:text.index(".text.", 1)]
    ins, line = [], None
    for row in text.splitlines():
        m = re.search(r'File "([^"]+)", line (\d+)', row)
        if "//## File" in row and m:
            line = int(m.group(2)) if m.group(1).endswith("/pruned.cu") else f"{m.group(1).split('/')[-1]}:{m.group(2)}"
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", row)
        if m:
            words = m.group(2).split()
            ins.append((words[1] if words[0].startswith("@") else words[0], line))
    rows = list(csv.reader(gzip.open(csv_path, "rt")))
    header, data = rows[1], rows[2:]
    assert len(data) == len(ins), (len(data), len(ins))
    for (op, _), r in zip(ins, data):
        words = r[1].split()
        assert (words[1] if words[0].startswith("@") else words[0]) == op, (op, r[1])
    return {h: i for i, h in enumerate(header)}, [(ln, r) for (_, ln), r in zip(ins, data)]


def function_of(src):
    """line -> the innermost function of pruned.cu's lines ``src`` written there (another file's name for
    its "file:line")."""
    heads = []
    for k, row in enumerate(src, 1):
        m = re.match(r'(?:template <.*>\s*)?(?:extern "C" )?__(?:device|global)__.*?(\w+)\(', row)
        if m and not row.rstrip().endswith(";"):
            heads.append((k, m.group(1)))
        elif re.match(r"pruned_\w+\(", row):
            heads.append((k, row.split("(")[0]))

    def function(ln):
        if not isinstance(ln, int):
            return ln.split(":")[0]
        return max(((k, n) for k, n in heads if k <= ln), default=(0, "?"))[1]
    return function


def main():
    sass_path, csv_path, source_path = sys.argv[1:4]
    top_n = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    src = open(source_path).read().splitlines()
    col, rows = paired_rows(sass_path, csv_path)
    reasons = [h for h in col if h.startswith("stall_") and "(Not" not in h]
    by_line = collections.defaultdict(collections.Counter)
    total = collections.Counter()
    for ln, r in rows:
        c = collections.Counter({"samples": int(r[col["Warp Stall Sampling (All Samples)"]] or 0),
                                 "inst": int(r[col["Instructions Executed"]] or 0)})
        c.update({h: int(r[col[h]] or 0) for h in reasons})
        by_line[ln].update(c)
        total.update(c)

    def share(c, key="samples"):
        return 100 * c[key] / total[key]

    print(f"{total['samples']} stall samples, {total['inst']} warp instructions")
    print("reasons (% of samples):", ", ".join(f"{h[6:]} {100 * total[h] / total['samples']:.1f}"
                                             for h in sorted(reasons, key=lambda h: -total[h])[:8]))
    print("\nsamples  instructions  line")
    for ln, c in sorted(by_line.items(), key=lambda kv: -kv[1]["samples"])[:top_n]:
        what = src[ln - 1].strip()[:70] if isinstance(ln, int) else ln
        top = sorted(reasons, key=lambda h: -c[h])[:3]
        print(f"{share(c):5.1f}%  {share(c, 'inst'):5.1f}%  l{ln}: {what:70s} | "
              + " ".join(f"{h[6:]}={100 * c[h] / max(c['samples'], 1):.0f}" for h in top))

    function = function_of(src)
    by_function = collections.defaultdict(collections.Counter)
    for ln, c in by_line.items():
        by_function[function(ln)].update(c)
    print("\nby innermost function (inlined code counts where it is written):\nsamples  instructions")
    for name, c in sorted(by_function.items(), key=lambda kv: -kv[1]["samples"])[:25]:
        print(f"{share(c):5.1f}%  {share(c, 'inst'):5.1f}%  {name}")


if __name__ == "__main__":
    main()
