"""Warp instructions and stall samples by innermost function of two ncu
source exports of pruned_period (paired with local -lineinfo builds, as
ncu_lines.py does): where two launch shapes differ."""
import collections, csv, gzip, re, sys

SRC = open("backends/cuda/pruned.cu").read().splitlines()
heads = []
for k, row in enumerate(SRC, 1):
    m = re.match(r'(?:template <.*>\s*)?(?:extern "C" )?__(?:device|global)__.*?(\w+)\(', row)
    if m and not row.rstrip().endswith(";"):
        heads.append((k, m.group(1)))
    elif re.match(r"pruned_\w+\(", row):
        heads.append((k, row.split("(")[0]))


def function(ln):
    if not isinstance(ln, int):
        return ln.split(":")[0]
    return max(((k, n) for k, n in heads if k <= ln), default=(0, "?"))[1]


def load(sass_path, csv_path):
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
    col = {h: i for i, h in enumerate(header)}
    assert len(data) == len(ins)
    fn, lines = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter)
    for (op, ln), r in zip(ins, data):
        w = r[1].split()
        assert (w[1] if w[0].startswith("@") else w[0]) == op
        c = collections.Counter(inst=int(r[col["Instructions Executed"]] or 0),
                                samples=int(r[col["Warp Stall Sampling (All Samples)"]] or 0))
        fn[function(ln)].update(c)
        lines[ln].update(c)
    return fn, lines


a_fn, a_ln = load(*sys.argv[1:3])
b_fn, b_ln = load(*sys.argv[3:5])
ta, tb = sum(c["inst"] for c in a_fn.values()), sum(c["inst"] for c in b_fn.values())
print(f"warp instructions: {ta:.4g} -> {tb:.4g} ({100 * (tb - ta) / ta:+.1f} %)")
print(f"{'function':28s} {'A inst':>12s} {'B inst':>12s} {'B-A':>12s}  % of A's total")
for name in sorted(set(a_fn) | set(b_fn), key=lambda n: -abs(b_fn[n]["inst"] - a_fn[n]["inst"]))[:16]:
    d = b_fn[name]["inst"] - a_fn[name]["inst"]
    print(f"{name:28s} {a_fn[name]['inst']:12.4g} {b_fn[name]['inst']:12.4g} {d:+12.4g}  {100 * d / ta:+6.2f}")
print("\nlines with the largest differences:")
for ln in sorted(set(a_ln) | set(b_ln), key=lambda n: -abs(b_ln[n]["inst"] - a_ln[n]["inst"]))[:14]:
    d = b_ln[ln]["inst"] - a_ln[ln]["inst"]
    what = SRC[ln - 1].strip()[:80] if isinstance(ln, int) else ln
    print(f"{100 * d / ta:+6.2f} %  l{ln}: {what}")
