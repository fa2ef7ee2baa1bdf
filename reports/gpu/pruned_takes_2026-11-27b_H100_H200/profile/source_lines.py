"""Warp stall samples per CUDA source line of one kernel, from Nsight Compute's
source page (``ncu -i REPORT --page source --csv --print-source cuda,sass > FILE``):

    python source_lines.py FILE [N]   # the N lines with the most samples (45)

Columns: share of all samples, warp instructions executed, file:line, source."""
import collections
import csv
import sys

samples, executed, text = collections.Counter(), collections.Counter(), {}
source = None
for row in csv.reader(open(sys.argv[1])):
    if row and row[0] == "File Path":
        source = row[1].split("/")[-1]
    elif len(row) >= 8 and row[0] not in ("", "Line No") and source:
        try:
            s, n = int(row[4]), int(row[7])  # Warp Stall Sampling (All Samples), Instructions Executed
        except ValueError:
            continue
        key = (source, int(row[0]))
        samples[key] += s
        executed[key] += n
        text[key] = row[1][:90]
total = sum(samples.values())
print("total samples", total)
for key, s in samples.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 45):
    print(f"{100 * s / total:5.1f}% {executed[key] / 1e6:8.2f}M  {key[0]}:{key[1]}  {text[key]}")
