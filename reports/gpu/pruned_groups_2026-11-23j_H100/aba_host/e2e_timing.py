"""ABA helper (untracked): warm medians of benchmarks.bench_search.search."""
import statistics
import sys
import time

from benchmarks.bench_search import search

CASES = [("pruned", 500, 1000), ("pruned", 4320, 10000), ("pruned", 20000, 1000), ("basic", 500, 1000),
         ("basic", 4320, 10000), ("thrust", 100000, 1000), ("thrust", 2000, 10000), ("thrust", 20000, 1000)]
for c in CASES:
    search(*c)
    ts = []
    for _ in range(9):
        t0 = time.perf_counter()
        search(*c)
        ts.append(time.perf_counter() - t0)
    print(sys.argv[1], c, "%.2f ms" % (1e3 * statistics.median(ts)), flush=True)
