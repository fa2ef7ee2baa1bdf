"""Warp instructions by innermost function and by line of two ncu source exports of ``pruned_period`` (each
paired with its local -lineinfo build by ``ncu_lines.py``): where two launch shapes differ.

    python fn_diff.py k512.sass src_k2n1800_512.csv.gz k256.sass src_k2n1800_256.csv.gz   # from the repository
"""
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "pruned_floor_2026-11-29_H200" / "ncu_60e6a9f"))
from ncu_lines import function_of, paired_rows  # noqa: E402

SRC = open("backends/cuda/pruned.cu").read().splitlines()
function = function_of(SRC)


def instructions(sass_path, csv_path):
    """(by function, by line): warp instructions executed."""
    col, rows = paired_rows(sass_path, csv_path)
    by_fn, by_line = collections.Counter(), collections.Counter()
    for ln, r in rows:
        n = int(r[col["Instructions Executed"]] or 0)
        by_fn[function(ln)] += n
        by_line[ln] += n
    return by_fn, by_line


a_fn, a_ln = instructions(*sys.argv[1:3])
b_fn, b_ln = instructions(*sys.argv[3:5])
ta, tb = sum(a_fn.values()), sum(b_fn.values())
print(f"warp instructions: {ta:.4g} -> {tb:.4g} ({100 * (tb - ta) / ta:+.1f} %)")
print(f"{'function':28s} {'A inst':>12s} {'B inst':>12s} {'B-A':>12s}  % of A's total")
for name in sorted(set(a_fn) | set(b_fn), key=lambda n: -abs(b_fn[n] - a_fn[n]))[:16]:
    d = b_fn[name] - a_fn[name]
    print(f"{name:28s} {a_fn[name]:12.4g} {b_fn[name]:12.4g} {d:+12.4g}  {100 * d / ta:+6.2f}")
print("\nlines with the largest differences:")
for ln in sorted(set(a_ln) | set(b_ln), key=lambda n: -abs(b_ln[n] - a_ln[n]))[:14]:
    d = b_ln[ln] - a_ln[ln]
    what = SRC[ln - 1].strip()[:80] if isinstance(ln, int) else ln
    print(f"{100 * d / ta:+6.2f} %  l{ln}: {what}")
