"""One backend's packed statistics (``search_many``) against ``search_batch``
end to end (one host thread, full and lean), alternating in one process on
the same K2-like light curves (``benchmarks.host_path.k2_like``): light
curves per second, warm medians, end to end over packed. Run on two trees
(the working tree and an older one) for an A/B of the host path.

    PYTHONPATH=. python end_to_end.py [--backend pruned] [--n 64] [--rounds 7] [--chunk 32]
"""

from __future__ import annotations

import argparse
import functools
import time

import numpy as np

import backends
from benchmarks.host_path import k2_like, plans_of


def alternate(ways, n, rounds, label="") -> dict:
    """Median light curves per second of each of ``ways`` (name -> call over
    ``n`` light curves), each warmed up once, then called in turn ``rounds``
    times; prints them."""
    for way in ways.values():
        way()
    rates = {name: [] for name in ways}
    for _ in range(rounds):
        for name, way in ways.items():
            start = time.perf_counter()
            way()
            rates[name].append(n / (time.perf_counter() - start))
    median = {name: float(np.median(r)) for name, r in rates.items()}
    for name, r in rates.items():
        print(f"{label} {name:>26}: {median[name]:6.1f} light curves/s (median of {len(r)}; {min(r):.1f}-{max(r):.1f})")
    return median


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="pruned")
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--chunk", type=int, default=32)
    args = ap.parse_args(argv)
    curves = k2_like(args.n)
    jobs = plans_of(curves, {})
    gpu = backends.get_backend(args.backend)
    ways = {"packed": functools.partial(gpu.search_many, jobs)}
    for lean in (False, True):
        ways["end to end" + (" lean" if lean else "")] = functools.partial(
            backends.search_batch, curves, backend=gpu, workers=1, lean=lean, chunk_size=args.chunk)
    median = alternate(ways, len(curves), args.rounds, args.backend)
    print(f"{args.backend}: end to end / packed {median['end to end'] / median['packed']:.3f}, "
          f"lean {median['end to end lean'] / median['packed']:.3f}")


if __name__ == "__main__":
    main()
