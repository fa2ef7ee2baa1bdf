"""Host CPU time per K2-like light curve (plan and lean statistics, one after
the other, no ``search_batch``), with the SDE detrend's keys sorted by
``running_median._sorted_keys`` (radix) and by ``np.sort``, interleaved in one
process so that the machine's speed falls on both alike.

    PYTHONPATH=. python reports/host_path/2026-11-29c_dev/ab_sort.py
"""

import statistics
import time

import numpy as np

import backends
import backends.running_median as rm
from backends.batch import _prepare
from backends.statistics import tls_results
from benchmarks.host_path import k2_like, plans_of


def main(n_curves=16, rounds=8):
    curves = k2_like(n_curves)
    stats = backends.get_backend("cpu").search_many(plans_of(curves, {}))
    sorts = {"radix": rm._sorted_keys, "numpy": lambda packed, shift: np.sort(packed)}

    def run():
        for k, (curve, found) in enumerate(zip(curves, stats)):
            tls_results(_prepare(k, curve, {}).plan, found, True)

    ms = {name: [] for name in sorts}
    for _ in range(rounds):
        for name, sort in sorts.items():
            rm._sorted_keys = sort
            run()
            start = time.process_time()
            run()
            run()
            ms[name].append((time.process_time() - start) / (2 * n_curves) * 1e3)
    for name, values in ms.items():
        print(f"{name}: median {statistics.median(values):.3f} ms per curve; rounds {[round(v, 2) for v in values]}")


if __name__ == "__main__":
    main()
