"""Is a slow process slow all along, or is the machine slow for a while? One
compute-only part of the host path (the running median of a K2-like spectrum:
no allocation but its output, no Python between its calls) timed in rounds of
~0.5 s for ``--seconds``; prints each round's median microseconds per call.

    python3 host_drift.py [--seconds 10] [--core K]
"""

import argparse
import os
import statistics
import time

import numpy as np

from backends.running_median import running_median

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=10)
ap.add_argument("--core", type=int)
args = ap.parse_args()
if args.core is not None:
    os.sched_setaffinity(0, {args.core})
spectrum = np.random.default_rng(1).normal(size=9679)
running_median(spectrum, 91)
rounds, end = [], time.perf_counter() + args.seconds
while time.perf_counter() < end:
    calls, stop = [], time.perf_counter() + 0.5
    while time.perf_counter() < stop:
        start = time.process_time_ns()
        running_median(spectrum, 91)
        calls.append((time.process_time_ns() - start) / 1e3)
    rounds.append(round(statistics.median(calls)))
print(os.getpid(), args.core, rounds, flush=True)
