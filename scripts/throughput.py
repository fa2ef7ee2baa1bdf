"""Throughput: K2-like light curves per second on this machine, exact statistic.

N seeded K2-like light curves (``datasets.simulate(preset="k2")``, baselines
90 d down to 86.4 d so lengths and grids differ a little) through

- ``one_by_one``:  ``backends.search`` on each in turn, one backend instance;
- ``batch_w<k>``:   ``backends.search_batch`` with k host threads (plans and
                   TLS results objects beside the packed ``search_many`` per chunk);
- ``search_many``: the packed GPU statistics alone, plans built beforehand;

each cold (kernel cache cleared, new instance) and warm (median of
``--repeats``); results are host arrays, and the device is synchronised
before every clock read. Where the time goes: plan building (serial and on
the pool), TLS's ``power()`` from precomputed statistics, and the backend's
stage times; plus CPU transitleastsquares' default ``power()`` on a few of
the curves for scale.

    python scripts/throughput.py [--n 64] [--backend simple] [--repeats 3]
                                 [--workers 1 2 8] [--chunk 32] [--tls-curves 2]
                                 [--option period_max=10] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import backends
from backends.batch import Precomputed
from backends.tls_power import power
from datasets import synthetic
from validation.batch import tls_option


def light_curves(n):
    out = []
    for k in range(n):
        lc = synthetic.simulate(seed=k, preset="k2", baseline=90.0 * (1 - 0.01 * (k % 5)), start=3000.0)
        out.append((lc.t, lc.y, lc.dy))
    return out


def fresh(name):
    """A new backend instance with empty kernel caches, in memory and on disk
    (a cold start: nvcc runs)."""
    from backends.implementations.pycuda_base import KERNELS

    KERNELS.clear()
    os.environ["TLS_KERNEL_CACHE_DIR"] = tempfile.mkdtemp()
    return backends.get_backend(name)


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


def tls_default(curves, options):
    seconds = []
    for t, y, dy in curves:
        start = time.perf_counter()
        power(t, y, dy, use_threads=os.cpu_count(), persistent_pool=True, **options)
        seconds.append(time.perf_counter() - start)
    return seconds


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--backend", default="simple")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 8],
                    help="host threads of search_batch, one run each")
    ap.add_argument("--chunk", type=int, default=32)
    ap.add_argument("--tls-curves", type=int, default=2, help="curves for CPU TLS (0: none)")
    ap.add_argument("--option", type=tls_option, action="append", default=[], help="TLS power() option")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    options = dict(args.option)
    curves = light_curves(args.n)
    n = len(curves)
    report = {"n": n, "backend": args.backend, "options": options, "workers": args.workers,
              "chunk": args.chunk, "ndata": sorted({c[0].size for c in curves})}

    backends.make_plan(*curves[0], **options)  # numba's first call, untimed
    start = time.perf_counter()
    plans = [backends.make_plan(*c, **options) for c in curves]
    report["plan_serial_s"] = (time.perf_counter() - start) / n
    with ThreadPoolExecutor(max(args.workers)) as pool:
        start = time.perf_counter()
        list(pool.map(lambda c: backends.make_plan(*c, **options), curves))
        report["plan_pool_s"] = (time.perf_counter() - start) / n
    report["periods"] = sorted({p.size for _, p in plans})
    make = lambda: fresh(args.backend)  # noqa: E731

    modes = {"search_many": lambda b: b.search_many(plans)}
    for k in args.workers:
        modes[f"batch_w{k}"] = lambda b, k=k: backends.search_batch(
            curves, backend=b, chunk_size=args.chunk, workers=k, **options)
    modes["one_by_one"] = lambda b: [backends.search(*c, backend=b, **options) for c in curves]
    for mode, run in modes.items():
        cold, warm, backend = cold_warm(make, run, args.repeats)
        report[mode] = {"cold_s": cold, "warm_s": warm, "curves_per_s_cold": n / cold,
                        "curves_per_s_warm": n / warm}
        if mode == "search_many":
            backend.timings.clear()
            stats = run(backend)
            backend.synchronize()
            report[mode]["stages_per_curve_s"] = {k: v / n for k, v in backend.timings.items()}
            device = backends.frontend.device_name(backend)
        print(f"{mode:12s} cold {cold:8.3f} s  warm {warm:8.3f} s  -> {n / warm:7.1f} curves/s warm",
              flush=True)

    start = time.perf_counter()
    for c, (plan, periods), found in zip(curves, plans, stats):
        backends.search(*c, backend=Precomputed(backend, periods, found, device), **options)
    report["power_from_stats_s"] = (time.perf_counter() - start) / n
    if args.tls_curves:
        seconds = tls_default(curves[:args.tls_curves], options)
        report["tls_default_s"] = seconds
        report["tls_default_curves_per_s_warm"] = 1 / float(np.median(seconds[1:] or seconds))
    report["device"] = device
    print(json.dumps(report, indent=1, default=float))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1, default=float)


if __name__ == "__main__":
    main()
