"""Re-time one asv EndToEnd case (``benchmarks.bench_search.search``) in the
tree on PYTHONPATH: warm median of ``--repeats`` after one warm-up, the
device synchronised by the search itself (results are host arrays).

    PYTHONPATH=TREE python retime.py cupy 4320 1000 [--repeats 15]
"""

import argparse
import time

import numpy as np

from benchmarks.bench_search import search

ap = argparse.ArgumentParser()
ap.add_argument("backend")
ap.add_argument("ndata", type=int)
ap.add_argument("nperiods", type=int)
ap.add_argument("--repeats", type=int, default=15)
args = ap.parse_args()
search(args.backend, args.ndata, args.nperiods)
seconds = []
for _ in range(args.repeats):
    start = time.perf_counter()
    search(args.backend, args.ndata, args.nperiods)
    seconds.append(time.perf_counter() - start)
print(f"{args.backend} {args.ndata} x {args.nperiods}: warm median {np.median(seconds) * 1e3:.2f} ms "
      f"(min {min(seconds) * 1e3:.2f}, max {max(seconds) * 1e3:.2f})")
