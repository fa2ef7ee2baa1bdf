"""The exact ``cpu`` backend against transitleastsquares' own ``fused`` backend,
same light curve, same periods, same number of threads, one process: warm
median seconds of the period search (TLS's ``backend.search``, which is what
``power()`` spends beside its statistics), speed ratio, and how far apart their
per-period chi2 (largest relative difference; TLS's exact contract: 1e-10) and
template rows are.

    python scripts/cpu_vs_fused.py [--cases k2,tess,tess78] [--threads 2] [--repeats 5]
                                   [--work] [--out FILE]

``--threads`` defaults to numba's (all cores); ``--work``: also the ``cpu``
backend's work counters per case.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_timing import case_plan  # noqa: E402

from backends import pruning  # noqa: E402
from backends.implementations.cpu import CPUBackend  # noqa: E402


def warm_medians(searches, repeats):
    """Each search's first (cold) result and warm median seconds over ``repeats``
    more calls, interleaved so that a change in the machine's load hits all alike."""
    firsts = [search() for search in searches]
    times = [[] for _ in searches]
    for _ in range(repeats):
        for search, spent in zip(searches, times):
            start = time.perf_counter()
            search()
            spent.append(time.perf_counter() - start)
    return firsts, [float(np.median(spent)) for spent in times]


def compare(case, threads, repeats):
    """One row: both backends' warm medians, the ratio, the agreement, the counters."""
    from transitleastsquares.backends import get_backend

    plan, periods = case_plan(case)
    fused, cpu = get_backend("fused"), CPUBackend()
    numba.set_num_threads(threads)

    def search_cpu():
        cpu.work.clear()
        return cpu.search(plan, periods)

    (ref, ours), (fused_s, cpu_s) = warm_medians(
        [lambda: fused.search(plan.problem, periods, use_threads=threads), search_cpu], repeats)
    order = np.argsort(periods)
    rel = np.max(np.abs(ours.chi2[order] - ref.chi2) / np.abs(ref.chi2))
    return dict(case=case, points=plan.lc.size, periods=periods.size, threads=threads,
                fused_s=fused_s, cpu_s=cpu_s, speed=fused_s / cpu_s, max_rel_chi2=float(rel),
                rows_differ=int(np.sum(ours.rows[order] != ref.rows)),
                work=pruning.work_summary(cpu.work))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="k2,tess,tess78")
    ap.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--work", action="store_true", help="print the cpu work counters")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    print(f"{'case':<8} {'points':>7} {'periods':>7} {'threads':>7} {'fused s':>9} {'cpu s':>9}"
          f" {'cpu speed':>9} {'max rel chi2':>12} {'rows differ':>11}")
    for case in args.cases.split(","):
        r = compare(case, args.threads, args.repeats)
        rows.append(r)
        print(f"{case:<8} {r['points']:>7} {r['periods']:>7} {r['threads']:>7} {r['fused_s']:9.3f}"
              f" {r['cpu_s']:9.3f} {r['speed']:8.2f}x {r['max_rel_chi2']:12.1e}"
              f" {r['rows_differ']:>11}", flush=True)
        if args.work:
            print("   ", r["work"], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
