"""Pair ncu's SASS rows of one kernel with a local -lineinfo build of the same source (nvdisasm -g -c of
nvcc_command(..., ["-lineinfo"]) with the backend's defines); totals by function and source line, stall reasons.

    python ncu_lines.py all.sass call1_ncu_source_sass.csv.gz call1_tensor_screen.cu.txt tensor_search 30
"""
import collections, csv, gzip, re, sys
sass_path, csv_path, src_path = sys.argv[1:4]
kernel = sys.argv[4] if len(sys.argv) > 4 else "tensor_search"
text = open(sass_path).read()
text = text[text.index(f".text.{kernel}:"):]
nxt = text.find(".text.", 1)
text = text[:nxt] if nxt > 0 else text
ins, line = [], None
for row in text.splitlines():
    m = re.search(r'File "([^"]+)", line (\d+)', row)
    if "//## File" in row and m:
        f = m.group(1).split("/")[-1]
        line = int(m.group(2)) if f == src_path.split("/")[-1] else f"{f}:{m.group(2)}"
        continue
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", row)
    if m:
        w = m.group(2).split()
        ins.append((w[1] if w[0].startswith("@") else w[0], line))
rows = list(csv.reader(gzip.open(csv_path, "rt")))
header, data = rows[1], rows[2:]
assert len(data) == len(ins), (len(data), len(ins))
for (op, _), r in zip(ins, data):
    w = r[1].split()
    assert (w[1] if w[0].startswith("@") else w[0]) == op, (op, r[1])
col = {h: i for i, h in enumerate(header)}
src = open(src_path).read().splitlines()
heads = []
for k, row in enumerate(src, 1):
    m = re.match(r'(?:template <.*>\s*)?(?:extern "C" )?(?:static )?__(?:device|global)__.*?(\w+)\(', row)
    if m and not row.rstrip().endswith(";"):
        heads.append((k, m.group(1)))
def fn(ln):
    if not isinstance(ln, int):
        return ln.split(":")[0]
    return max(((k, n) for k, n in heads if k <= ln), default=(0, "?"))[1]
by_line = collections.defaultdict(collections.Counter); by_fn = collections.defaultdict(collections.Counter)
tot = collections.Counter()
reasons = [h for h in header if h.startswith("stall_") and "(Not" not in h] if any(h.startswith("stall_") for h in header) else []
for (op, ln), r in zip(ins, data):
    c = collections.Counter(inst=int(r[col["Instructions Executed"]] or 0), samp=int(r[col["Warp Stall Sampling (All Samples)"]] or 0),
                            l1=int(r[col["L1 Wavefronts Shared"]] or 0) if "L1 Wavefronts Shared" in col else 0)
    by_line[ln].update(c); by_fn[fn(ln)].update(c); tot.update(c)
print("total inst %.4g samples %d shared wavefronts %.4g" % (tot["inst"], tot["samp"], tot["l1"]))
print("by function:")
for k, c in sorted(by_fn.items(), key=lambda kv: -kv[1]["samp"])[:20]:
    print(f"  {k:28s} inst {100*c['inst']/tot['inst']:5.1f}%  samples {100*c['samp']/tot['samp']:5.1f}%  shmem wf {100*c['l1']/max(tot['l1'],1):5.1f}%")
print("by line (top by samples):")
for k, c in sorted(by_line.items(), key=lambda kv: -kv[1]["samp"])[:int(sys.argv[5]) if len(sys.argv) > 5 else 45]:
    what = src[k - 1].strip()[:90] if isinstance(k, int) else k
    print(f"  {100*c['samp']/tot['samp']:5.1f}% samp {100*c['inst']/tot['inst']:5.1f}% inst {100*c['l1']/max(tot['l1'],1):5.1f}% shwf  l{k}: {what}")
print("stall reasons overall:")
rs = [h for h in header if h.startswith("stall_") and "(Not" not in h]
tr = collections.Counter()
per_line = collections.defaultdict(collections.Counter)
for (op, ln), r in zip(ins, data):
    for h in rs:
        v = int(r[col[h]] or 0); tr[h] += v; per_line[ln][h] += v
T = sum(tr.values())
print("  " + ", ".join(f"{h[6:]} {100*v/T:.1f}%" for h, v in tr.most_common(10)))
for ln in sorted(per_line, key=lambda l: -sum(per_line[l].values()))[:14]:
    c = per_line[ln]; s = sum(c.values())
    what = src[ln - 1].strip()[:50] if isinstance(ln, int) else ln
    print(f"  l{ln} {100*s/T:.1f}%: " + ", ".join(f"{h[6:]} {100*v/T:.1f}" for h, v in c.most_common(4)) + f"   {what}")
