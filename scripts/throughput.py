"""Throughput: K2-like light curves per second on this machine, exact statistic,
and the host's part of it, against issue 13's targets.

N seeded K2-like light curves (``benchmarks.host_path.k2_like``: baselines
90 d down to 86.4 d, so lengths and grids differ a little) through

- ``search_many``: the backend's packed statistics alone, plans built beforehand;
- ``batch_w<k>``:  ``backends.search_batch`` with k host threads, TLS's results objects;
- ``lean_w<k>``:   the same in the lean mode (``validation.batch``'s);
- ``one_by_one``:  ``backends.search`` on each in turn (TLS's results, full);

each cold (kernel cache cleared, new instance) and warm (median of
``--repeats``); results are host arrays, and the device is synchronised
before every clock read. The host's part alone: ``search_batch`` with the
statistics replayed (``benchmarks.host_path.Replay``), CPU seconds per light
curve, full and lean, and of it the plans and the statistics. Targets
(``targets``): host <= 2 ms per light curve (lean; with the core's speed at
the time, ``benchmarks.host_path.cpu_probe_us`` and ``python_probe_us``), end
to end (``batch_w<first of --workers>``) within 10 % of the packed statistics'
rate. CPU transitleastsquares' default ``power()`` on a few of the curves for
scale.

    python scripts/throughput.py [--n 64] [--backend simple] [--repeats 3]
                                 [--workers 1 2 8] [--chunk 32] [--tls-curves 2]
                                 [--option period_max=10] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import backends  # noqa: E402
from backends import statistics  # noqa: E402
from backends.tls_power import power  # noqa: E402
from benchmarks.host_path import HOST_TARGET_S, Replay, host_seconds, k2_like, plans_of  # noqa: E402
from validation.batch import tls_option  # noqa: E402

END_TO_END_TARGET = 0.9  # end to end over the packed statistics' rate


def fresh(name):
    """A new backend instance with empty kernel caches, in memory and on disk
    (a cold start: nvcc runs)."""
    from backends.implementations.pycuda_base import KERNELS

    KERNELS.clear()
    os.environ["TLS_KERNEL_CACHE_DIR"] = tempfile.mkdtemp()
    return backends.registry.backend_class(name)()  # not get_backend's kept instance


def clocked(fn, backend):
    start = time.perf_counter()
    fn()
    backend.synchronize()
    return time.perf_counter() - start


def cold_warm(make, run, repeats):
    """(cold s, warm median s, warm instance) of ``run(instance)``."""
    backend = make()
    cold = clocked(lambda: run(backend), backend)
    warm = [clocked(lambda: run(backend), backend) for _ in range(repeats)]
    return cold, float(np.median(warm)), backend


def cpu_seconds(fn, n):
    """CPU seconds of this process per light curve of ``fn()`` (all its threads)."""
    start = time.process_time()
    fn()
    return (time.process_time() - start) / n


def tls_default(curves, options):
    seconds = []
    for t, y, dy in curves:
        start = time.perf_counter()
        power(t, y, dy, use_threads=os.cpu_count(), persistent_pool=True, **options)
        seconds.append(time.perf_counter() - start)
    return seconds


def host_part(curves, plans, backend, repeats, chunk, options) -> dict:
    """The host's CPU seconds per light curve: ``search_batch`` with the
    statistics replayed (full and lean), its plans and its statistics;
    ``plans``: the curves' (``plans_of``)."""
    replay = Replay(curves, backend, plans=plans)
    found = [replay.search(plan, periods) for plan, periods in plans]
    n = len(curves)
    out = {"plan_cpu_s_per_curve": cpu_seconds(lambda: plans_of(curves, options), n)}
    for mode, lean in (("full", False), ("lean", True)):
        out[mode] = host_seconds(curves, replay, lean=lean, repeats=repeats, chunk_size=chunk, **options)
        out[mode]["statistics_cpu_s_per_curve"] = cpu_seconds(
            lambda: [statistics.tls_results(p, f, lean) for (p, _), f in zip(plans, found)], n)
    return out


def targets(report) -> dict:
    """Issue 13's targets against this report's measurements."""
    host = report["host"]["lean"]["cpu_s_per_curve"]
    packed = report["search_many"]["curves_per_s_warm"]
    end_to_end = report[f"batch_w{report['workers'][0]}"]["curves_per_s_warm"]
    return {"host_s_per_curve": host, "host_target_s": HOST_TARGET_S, "host_met": host <= HOST_TARGET_S,
            "host_probe_us": report["host"]["lean"].get("probe_us"),
            "host_python_probe_us": report["host"]["lean"].get("python_probe_us"),
            "end_to_end_over_packed": end_to_end / packed, "end_to_end_target": END_TO_END_TARGET,
            "end_to_end_met": end_to_end / packed >= END_TO_END_TARGET}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--backend", default="simple")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 8],
                    help="host threads of search_batch, one run each (the first: the end-to-end target's)")
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--tls-curves", type=int, default=2, help="curves for CPU TLS (0: none)")
    ap.add_argument("--option", type=tls_option, action="append", default=[], help="TLS power() option")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    options = dict(args.option)
    curves = k2_like(args.n)
    n = len(curves)
    report = {"n": n, "backend": args.backend, "options": options, "workers": args.workers,
              "chunk": args.chunk, "ndata": sorted({c[0].size for c in curves})}

    plans_of(curves[:1], options)  # numba's first calls, untimed
    start = time.perf_counter()
    plans = plans_of(curves, options)
    report["plan_serial_s"] = (time.perf_counter() - start) / n
    with ThreadPoolExecutor(max(args.workers)) as pool:
        start = time.perf_counter()
        list(pool.map(lambda c: plans_of([c], options), curves))
        report["plan_pool_s"] = (time.perf_counter() - start) / n
    report["periods"] = sorted({p.size for _, p in plans})
    make = lambda: fresh(args.backend)  # noqa: E731

    modes = {"search_many": lambda b: b.search_many(plans)}
    for k in args.workers:
        for mode, lean in (("batch", False), ("lean", True)):
            modes[f"{mode}_w{k}"] = lambda b, k=k, lean=lean: backends.search_batch(
                curves, backend=b, chunk_size=args.chunk, workers=k, lean=lean, **options)
    modes["one_by_one"] = lambda b: [backends.search(*c, backend=b, **options) for c in curves]
    for mode, run in modes.items():
        cold, warm, backend = cold_warm(make, run, args.repeats)
        report[mode] = {"cold_s": cold, "warm_s": warm, "curves_per_s_cold": n / cold,
                        "curves_per_s_warm": n / warm}
        if mode == "search_many":
            backend.timings.clear()
            run(backend)
            backend.synchronize()
            report[mode]["stages_per_curve_s"] = {k: v / n for k, v in backend.timings.items()}
            report["device"] = backends.frontend.device_name(backend)
            searcher = backend
        print(f"{mode:12s} cold {cold:8.3f} s  warm {warm:8.3f} s  -> {n / warm:7.1f} curves/s warm",
              flush=True)

    report["host"] = host_part(curves, plans, searcher, args.repeats, args.chunk, options)
    report["targets"] = targets(report)
    if args.tls_curves:
        seconds = tls_default(curves[:args.tls_curves], options)
        report["tls_default_s"] = seconds
        report["tls_default_curves_per_s_warm"] = 1 / float(np.median(seconds[1:] or seconds))
    print(json.dumps(report, indent=1, default=float))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, default=float)


if __name__ == "__main__":
    main()
