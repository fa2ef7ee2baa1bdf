"""``pruned``'s queued ``search_many`` against one ``search`` after another,
alternating in one process on the same K2-like light curves
(``benchmarks.host_path.k2_like``): light curves per second, warm medians.

    python scripts/search_many_ab.py [--n 64] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import backends
from backends.protocol import TLSBackend
from benchmarks.host_path import k2_like, plans_of


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    jobs = plans_of(k2_like(args.n), {})
    gpu = backends.get_backend("pruned")
    ways = {"queued search_many": gpu.search_many,
            "one search after another": lambda jobs: TLSBackend.search_many(gpu, jobs)}
    first = {name: way(jobs) for name, way in ways.items()}  # warm-up, and the same fits both ways
    for a, b in zip(*first.values()):
        np.testing.assert_array_equal(a.chi2, b.chi2)
    rates = {name: [] for name in ways}
    for _ in range(args.rounds):
        for name, way in ways.items():
            start = time.perf_counter()
            way(jobs)
            rates[name].append(len(jobs) / (time.perf_counter() - start))
    for name, r in rates.items():
        print(f"{name:>26}: {np.median(r):6.1f} light curves/s (median of {len(r)}; {min(r):.1f}-{max(r):.1f})")


if __name__ == "__main__":
    main()
