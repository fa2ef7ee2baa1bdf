"""Timing table of the GPU backends on the device machine: per light curve,
cold first search (compilation included) and warm median, plus CPU
transitleastsquares 2.0.4 (default and ``fused``) on the same machine.

    python scripts/gpu_timing.py [--backends basic,simple,thrust] [--tls k2] [--out FILE]
                                 [--repeats 5] [--min-seconds 0.25]
                                 [--sweep block_size=32,64,128,256] [--sweep prune_min=1,8,32 ...]

``--sweep`` also times each backend with every combination of the given
constructor options (warm medians of 3, kernels kept between them).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import tempfile
import time

import numpy as np

import backends
from backends.tls_power import power
from datasets import synthetic
from validation import monitor

CASES = {"k2": dict(preset="k2", ndata=4320), "tess": dict(preset="tess", ndata=18000),
         # a simulated 2-minute TESS light curve of two sectors and a half (78 d)
         "tess78": dict(preset="tess", baseline=78.0, ndata=49000),
         # K2-like with per-point errors that differ by up to 20 %, as a real light curve's do
         "k2w": dict(preset="k2", ndata=4320)}
OPTIONS = {"tess78": dict(period_max=20.0)}  # power() options per case
CLOCK_SECONDS = 0.3  # warm searches after the timed ones, while the SM clock is sampled
ERROR_SPREAD = {"k2w": 0.2}  # per case: dy scaled by 1 + a uniform draw in [0, spread)


@functools.cache  # a case's curve is made once for its plan and TLS's timing
def light_curve(case):
    lc = synthetic.simulate(seed=1, start=3000.0, **CASES[case])
    spread = ERROR_SPREAD.get(case, 0.0)
    dy = lc.dy * (1 + np.random.default_rng(2).uniform(0.0, spread, lc.dy.size)) if spread else lc.dy
    return lc.t, lc.y, dy


def case_plan(case):
    """(plan, periods) of a timing case with its ``power()`` options."""
    return backends.make_plan(*light_curve(case), **OPTIONS.get(case, {}))


def warm_times(search, repeats, min_seconds=0.0) -> list:
    """Seconds of ``repeats`` calls of ``search``, and of more until they sum
    to ``min_seconds``: five searches of a few milliseconds are a short
    sample (H200, step 92: tensor's K2-like median of 5 was 4.06 ms in one
    call, of 15 3.82 ms in the next; why they differ was not found)."""
    warm = []
    while len(warm) < repeats or sum(warm) < min_seconds:
        start = time.perf_counter()
        search()
        warm.append(time.perf_counter() - start)
    return warm


def time_backend(name, plan, periods, repeats, clear=True, min_seconds=0.0, **options):
    """(cold s, warm median s, warm min s, stage seconds of one warm search,
    the GPUs' use and SM clock) of backend ``name`` made with ``options``: the
    same kernel on the same GPU model runs slower below its maximum clock.
    The clock is sampled over CLOCK_SECONDS of further warm searches, so that
    nvidia-smi's processes take nothing from the timed ones."""
    from backends.implementations.pycuda_base import KERNELS

    if clear:
        KERNELS.clear()
    backend = backends.registry.backend_class(name)(**options)
    start = time.perf_counter()
    backend.search(plan, periods)
    cold = time.perf_counter() - start

    def search():
        backend.timings.clear()
        backend.work.clear()
        backend.search(plan, periods)

    warm = warm_times(search, repeats, min_seconds)
    with monitor.Sampler(interval=0.05) as sampler:
        warm_times(search, 0, CLOCK_SECONDS)
    stages = {k: round(v, 5) for k, v in backend.timings.items()}
    stages.update({f"work_{k}": v for k, v in backend.work.items()})
    return cold, float(np.median(warm)), float(np.min(warm)), stages, sampler.summary()


def clock_text(gpus) -> str:
    """The busy GPUs' SM clock as sampled, "1755/1980" MHz each ("" where unknown)."""
    return " ".join(f"{g['busy_sm_mhz']:.0f}/{g['max_sm_mhz']:.0f}" for g in gpus.values()
                    if g["busy_sm_mhz"] is not None and g["max_sm_mhz"] is not None)


def time_tls(t, y, dy, method, threads, **options):
    """(cold, warm) seconds of transitleastsquares' own power() with ``method``."""
    out = []
    for _ in range(2):
        start = time.perf_counter()
        power(t, y, dy, backend=None if method == "default" else method, use_threads=threads,
              persistent_pool=True, **options)
        out.append(time.perf_counter() - start)
    return out[0], out[1]


def sweep(specs) -> list:
    """Every combination of ``["key=v1,v2", ...]`` as option dicts (none: []);
    each value a Python literal where it is one, else text (layout=shared,global)."""
    from validation.batch import tls_option

    if not specs:
        return []
    keys, values = zip(*(spec.split("=", 1) for spec in specs))
    return [dict(zip(keys, combo)) for combo in
            itertools.product(*([tls_option(f"{k}={v}")[1] for v in vs.split(",")] for k, vs in zip(keys, values)))]


def main():
    os.environ["TLS_KERNEL_CACHE_DIR"] = tempfile.mkdtemp()  # cold means nvcc runs
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="basic,simple,thrust")
    ap.add_argument("--cases", default="k2,tess")
    ap.add_argument("--tls", default="k2", help="cases to time CPU TLS on ('' for none)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-seconds", type=float, default=0.25, help="more warm searches until they sum to this")
    ap.add_argument("--out", default=None)
    ap.add_argument("--sweep", action="append", default=[], metavar="OPTION=V1,V2",
                    help="also time every combination of these backend options (Python literals or text)")
    args = ap.parse_args()
    rows = []
    for case in args.cases.split(","):
        t, y, dy = light_curve(case)
        plan, periods = case_plan(case)
        from backends.implementations.pycuda_base import scan_macs
        lo, hi = plan.width_windows(periods)
        macs = sum(scan_macs(plan, a, b) for a, b in zip(lo, hi))
        label = f"{case} n={t.size} periods={periods.size} GMAC={macs / 1e9:.1f}"
        for name in args.backends.split(","):
            if backends.available_backends()[name] is not None:
                continue
            try:
                cold, warm, best, stages, gpus = time_backend(name, plan, periods, args.repeats,
                                                              min_seconds=args.min_seconds)
            except ValueError as exc:  # simple: light curve beyond shared memory
                rows.append(dict(case=label, backend=name, note=str(exc)[:60]))
                continue
            rows.append(dict(case=label, backend=name, cold_s=cold, warm_median_s=warm,
                             warm_min_s=best, stages=stages, gpus=gpus))
            print(rows[-1], flush=True)
            for options in sweep(args.sweep):
                cold, warm, best, stages, gpus = time_backend(name, plan, periods, 3, False, **options)
                tag = " ".join(f"{k}={v}" for k, v in options.items())
                rows.append(dict(case=label, backend=f"{name} {tag}", cold_s=cold,
                                 warm_median_s=warm, warm_min_s=best, stages=stages, gpus=gpus))
                print(rows[-1], flush=True)
        if case in args.tls.split(","):
            for method in ("default", "fused"):
                cold, warm = time_tls(t, y, dy, method, os.cpu_count(), **OPTIONS.get(case, {}))
                rows.append(dict(case=label, backend=f"TLS {method} ({os.cpu_count()} cores)",
                                 cold_s=cold, warm_median_s=warm, warm_min_s=warm))
                print(rows[-1], flush=True)
    print(f"\n{'case':<44} {'backend':<26} {'cold s':>9} {'warm med s':>11} {'warm min s':>11}"
          "  GPU stages s (fold_sort, chi2_scan, its kernel by CUDA events), SM MHz while warm (of max)")
    for r in rows:
        if "note" in r:
            print(f"{r['case']:<44} {r['backend']:<26} {r['note']}")
        else:
            print(f"{r['case']:<44} {r['backend']:<26} {r['cold_s']:9.3f} "
                  f"{r['warm_median_s']:11.4f} {r['warm_min_s']:11.4f}  "
                  f"{r.get('stages', {}).get('fold_sort', 0):.4f} "
                  f"{r.get('stages', {}).get('chi2_scan', 0):.4f} "
                  f"{r.get('stages', {}).get('chi2_scan.kernel', 0):.4f} {clock_text(r.get('gpus', {}))}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
