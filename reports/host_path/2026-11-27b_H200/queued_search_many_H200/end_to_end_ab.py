"""``pruned``'s queued ``search_many`` against one ``search`` after another,
packed and end to end (``search_batch``, one host thread, full and lean),
alternating in one process on the same K2-like light curves
(``benchmarks.host_path.k2_like``): light curves per second, warm medians,
and end to end over packed for each way. Run with the queued search_many of
``reports/gpu/pruned_push_2026-11-27_H100/queued_search_many_rejected/`` applied.

    PYTHONPATH=. python end_to_end_ab.py [--n 64] [--rounds 5]
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

import backends
from backends.protocol import TLSBackend
from benchmarks.host_path import k2_like, plans_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from end_to_end import alternate  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)
    curves = k2_like(args.n)
    jobs = plans_of(curves, {})
    queued = backends.get_backend("pruned")
    serial = backends.get_backend("pruned")
    serial.search_many = functools.partial(TLSBackend.search_many, serial)
    ways = {}
    for name, gpu in (("queued", queued), ("serial", serial)):
        ways[f"{name} packed"] = functools.partial(gpu.search_many, jobs)
        for lean in (False, True):
            ways[f"{name} end to end{' lean' if lean else ''}"] = functools.partial(
                backends.search_batch, curves, backend=gpu, workers=1, lean=lean)
    first = {name: ways[f"{name} packed"]() for name in ("queued", "serial")}  # the same fits both ways
    for a, b in zip(*first.values()):
        np.testing.assert_array_equal(a.chi2, b.chi2)
        np.testing.assert_array_equal(a.rows, b.rows)
    median = alternate(ways, len(curves), args.rounds)
    for name in ("queued", "serial"):
        packed = median[f"{name} packed"]
        print(f"{name}: end to end / packed {median[f'{name} end to end'] / packed:.3f}, "
              f"lean {median[f'{name} end to end lean'] / packed:.3f}; "
              f"against serial packed {median[f'{name} end to end'] / median['serial packed']:.3f}")


if __name__ == "__main__":
    main()
