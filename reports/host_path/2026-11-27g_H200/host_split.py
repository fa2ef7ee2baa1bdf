"""Where a K2-like light curve's host time goes: ``search_batch`` (lean, one
worker thread) against the same per-curve work done in the main thread alone
(``_prepare`` then ``tls_results``), each also pinned to one core, rounds
alternating in one process; then each part of that work timed alone in tight
loops. 64 K2-like curves, ``pruned``'s statistics replayed (``benchmarks.host_path``).

    PYTHONPATH=/tmp/site:$PWD python3 reports/host_path/2026-11-27g_H200/host_split.py [--backend pruned]
"""

import argparse
import json
import os
import resource
import statistics
import time

import numpy as np

import backends
from backends import inputs
from backends import statistics as S
from backends.batch import _prepare
from backends.running_median import running_median
from backends.t0_fit import final_T0_fit
from backends.tls_model import PlannedModel
from benchmarks.host_path import Replay, k2_like

ap = argparse.ArgumentParser()
ap.add_argument("--backend", default="pruned")
ap.add_argument("--rounds", type=int, default=7)
args = ap.parse_args()

curves = k2_like(64)
replay = Replay(curves, backends.get_backend(args.backend))
all_cores = os.sched_getaffinity(0)


def direct():
    for k, c in enumerate(curves):
        case = _prepare(k, c, {})
        S.tls_results(case.plan, replay.search(case.plan, case.periods), True)


def batch():
    backends.search_batch(curves, backend=replay, lean=True)


def pinned(f):
    def run():
        os.sched_setaffinity(0, {min(all_cores)})
        try:
            f()
        finally:
            os.sched_setaffinity(0, all_cores)
    run.__name__ = f.__name__ + "_pinned"
    return run


ways = [direct, batch, pinned(direct), pinned(batch)]
cpu = {f.__name__: [] for f in ways}
switches = {f.__name__: [] for f in ways}
for f in ways:
    f()
for _ in range(args.rounds):
    for f in ways:
        r0, c0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        f()
        r1, c1 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        cpu[f.__name__].append((c1 - c0) / len(curves) * 1e3)
        switches[f.__name__].append((r1.ru_nvcsw + r1.ru_nivcsw - r0.ru_nvcsw - r0.ru_nivcsw) / len(curves))
out = {"cpu_ms_per_curve": {k: statistics.median(v) for k, v in cpu.items()},
       "cpu_ms_rounds": cpu, "switches_per_curve": {k: statistics.median(v) for k, v in switches.items()}}

cases = [_prepare(k, c, {}) for k, c in enumerate(curves[:16])]
found = [S.sorted_by_period(c.plan.model.grid, replay.search(c.plan, c.periods)) for c in cases]
spectra = [S.spectra(f, c.plan.model) for f, c in zip(found, cases)]


def best(c, f, s):
    m, i = c.plan.model, int(np.argmax(s[2]))
    return m.cache.lc_arr[f.rows[i]], f.depths[i], m.t, m.y, m.dy, f.periods[i], m.T0_fit_margin


parts = {
    "prepare (clean, checks, plan)": lambda c, f, s: _prepare(0, (c.plan.lc.t, c.plan.lc.y, None), {}),
    "  clean": lambda c, f, s: inputs.clean(c.plan.lc.t, c.plan.lc.y),
    "  PlannedModel": lambda c, f, s: PlannedModel(c.plan.model.t, c.plan.model.y, c.plan.model.dy, {}),
    "tls_results lean": lambda c, f, s: S.tls_results(c.plan, replay.search(c.plan, c.periods), True),
    "  spectra": lambda c, f, s: S.spectra(f, c.plan.model),
    "    running_median": lambda c, f, s: running_median(s[1], 91),
    "  detection_statistics": lambda c, f, s: S.detection_statistics(c.plan.model, f, s, True),
    "    final_T0_fit": lambda c, f, s: final_T0_fit(*best(c, f, s)),
}
out["parts_ms"] = {}
for name, part in parts.items():
    runs = []
    for _ in range(args.rounds):
        start = time.process_time()
        for c, f, s in zip(cases, found, spectra):
            part(c, f, s)
        runs.append((time.process_time() - start) / len(cases) * 1e3)
    out["parts_ms"][name] = statistics.median(runs)
print(json.dumps(out, indent=1))
