"""K2-like light curves through ``python -m validation.batch`` on 1 and 2 GPUs
(issue 7's scaling run) or many on one (issue 13's demonstration); warm rate,
cold start, GPU use, peak memory and cost per run.

    python scripts/multigpu_scaling.py --n 1200 --backends simple --out reports/gpu/latest/multigpu
    python scripts/multigpu_scaling.py --n 10000 --backends pruned --runs 1:distributed:4 --out ...

Writes N seeded K2-like light curves (``datasets.simulate``, preset "k2") as
``.npz``, then per backend runs the CLI with ``--warmup --summary --monitor 1
--usd-per-gpu-hour PRICE`` for each of ``--runs`` (GPUs:cluster[:workers per
GPU]; "auto" is dask-cuda when installed): GPU use and memory per PCI bus id,
which process holds a context on which GPU, the run's peak host memory and
the cost of a million light curves. After each run, ``scaling.json``
(everything: rates, Parquet row counts, per-worker pid / CUDA_VISIBLE_DEVICES /
PCI bus id / cold seconds) and ``scaling.md`` (the table) are written again.
With ``--mps`` the runs share each GPU through an NVIDIA MPS daemon the
script starts and quits (``validation.mps``); the table says which runs had one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
USD_PER_GPU_HOUR = 3.0  # a stated price: an H100 on demand in 2026, roughly
def write_curve(folder, seed):
    import datasets

    lc = datasets.simulate(seed=seed, preset="k2")
    np.savez(Path(folder) / f"k2_{seed:05d}.npz", time=lc.t, flux=lc.y, flux_err=lc.dy)


def write_curves(folder, n):
    """N seeded K2-like light curves as .npz in ``folder``, on every core."""
    # transitleastsquares' gufuncs compiled and cached here, once, not by the pool's processes racing (numba #10128)
    import transitleastsquares  # noqa: F401

    folder.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor() as pool:
        list(pool.map(write_curve, [folder] * n, range(n), chunksize=32))


def run_batch(inputs, work, backend, gpus, cluster, tls, timeout, batch_size=None, per_gpu=1,
              usd_per_gpu_hour=USD_PER_GPU_HOUR, stall_dump=None):
    """One ``python -m validation.batch`` run: its summary (resources and cost
    included) and Parquet counts; its whole log in ``work``/run.log (with
    ``stall_dump``, the stacks of a worker whose batch ran past it)."""
    import pandas as pd

    shutil.rmtree(work, ignore_errors=True)  # a fresh run, not a resumed one
    work.mkdir(parents=True)
    out, summary_file = work / "out", work / "summary.json"
    cmd = [sys.executable, "-m", "validation.batch", "--gpus", str(gpus), "--gpu-cluster", cluster,
           "--workers-per-gpu", str(per_gpu),
           "--backend", backend, *(["--batch-size", str(batch_size)] if batch_size else []),
           "--warmup", "--no-progress",
           "--summary", str(summary_file), "--out", str(out), "--monitor", "1",
           "--usd-per-gpu-hour", str(usd_per_gpu_hour), *(["--stall-dump", str(stall_dump)] if stall_dump else []),
           *[a for kv in tls for a in ("--tls", kv)], str(inputs)]
    start = time.perf_counter()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                          start_new_session=True) as proc:
        try:
            log, rc = proc.communicate(timeout=timeout)[0], proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its Dask workers too: no GPU held into the next run
            log, rc = proc.communicate()[0], "timeout"
    (work / "run.log").write_text(log)
    record = {"gpus": gpus, "gpu_cluster": cluster, "per_gpu": per_gpu, "backend": backend, "rc": rc,
              "wall_seconds": time.perf_counter() - start, "log_tail": log[-3000:]}
    if summary_file.exists():
        record.update(json.loads(summary_file.read_text()))
    resources = record.get("resources", {})
    for worker in record.get("workers", {}).values():  # None where nvidia-smi sees other pids
        worker["nvidia_smi"] = resources.get("apps", {}).get(str(worker["pid"]))
    rows = pd.read_parquet(out) if out.exists() and any(out.glob("part-*.parquet")) else pd.DataFrame()
    record["parquet"] = {"rows": len(rows), "ids": int(rows["id"].nunique()) if len(rows) else 0,
                         "errors": int(rows["error"].notna().sum()) if len(rows) else 0,
                         "files": len(list(out.glob("part-*.parquet")))}
    record["gpu_use"] = resources.get("gpus", {})
    bus_ids = [w["pci_bus_id"] for w in record.get("workers", {}).values()]
    record["distinct_gpus"] = (len(bus_ids) == gpus * per_gpu and len(set(bus_ids)) == gpus
                               and None not in bus_ids)
    return record


def dask_cuda_version():
    """dask-cuda's version, or why it does not import ("auto" then means distributed's Nannies)."""
    try:
        import dask_cuda
    except Exception as exc:  # not installed, or its CUDA dependencies missing
        return f"not importable: {type(exc).__name__}: {exc}"
    return dask_cuda.__version__


def table(report):
    from validation.monitor import bus_id

    lines = [f"{report['n']} K2-like light curves, {report['gpu']}; rate excludes each worker's "
             "warm-up search (cold = that warm-up, context and kernel builds included); GPU use and memory "
             "sampled every second during the timed part; cost at "
             f"${report.get('usd_per_gpu_hour', USD_PER_GPU_HOUR):.2f} per GPU-hour", "",
             "| backend | GPUs | workers per GPU | MPS | cluster | rate [lc/s] | speed-up | searched | "
             "Parquet rows | errors | cold per worker [s] | worker GPUs (PCI) | distinct | GPU busy [%] | "
             "peak GPU memory [MiB] | peak host memory [MiB] | $ per million curves | rc |",
             "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---|"]
    def one_gpu(r, per_gpu):
        return next((x.get("per_second") for x in report["runs"]
                     if x["backend"] == r["backend"] and x["gpus"] == 1 and x.get("per_gpu", 1) == per_gpu
                     and x.get("per_second")), None)

    for r in report["runs"]:  # speed-up over one GPU with as many workers per GPU, else with one
        one = one_gpu(r, r.get("per_gpu", 1)) or one_gpu(r, 1)
        rate = r.get("per_second")
        speedup = f"{rate / one:.2f}x" if rate and one else "-"
        workers = r.get("workers", {}).values()
        cold = ", ".join(f"{w['warmup_seconds']:.1f}" for w in workers if "warmup_seconds" in w)
        pci = ", ".join(str(w["pci_bus_id"]) for w in workers)
        held = {bus_id(w["pci_bus_id"]) for w in workers if w["pci_bus_id"]}
        used = [g for bus, g in r.get("gpu_use", {}).items() if bus in held]  # the GPUs the run's workers held
        busy = ", ".join(f"{g['mean_util_pct']:.0f}" for g in used) or "-"
        peak = ", ".join(f"{g['max_used_mib']:.0f}" for g in used) or "-"
        host = r.get("resources", {}).get("host_peak_rss_mib")
        usd = (r.get("cost") or {}).get("usd_per_million_curves")
        lines.append(f"| {r['backend']} | {r['gpus']} | {r.get('per_gpu', 1)} | {'yes' if r.get('mps') else 'no'} | "
                     f"{r.get('cluster', r['gpu_cluster'])} | "
                     f"{rate or 0:.1f} | {speedup} | {r.get('searched', '-')} | {r['parquet']['rows']} | "
                     f"{r['parquet']['errors']} | {cold} | {pci} | {r['distinct_gpus']} | {busy} | {peak} | "
                     f"{'-' if host is None else f'{host:.0f}'} | {'-' if usd is None else f'{usd:.2f}'} | "
                     f"{r['rc']} |")
    return "\n".join(lines) + "\n"


def run_spec(spec):
    """(GPUs, cluster, workers per GPU) of a run "GPUS[:CLUSTER[:WORKERS_PER_GPU]]"."""
    gpus, cluster, per_gpu = (spec.split(":") + [None, None])[:3]
    return int(gpus), cluster or "auto", int(per_gpu or 1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1200, help="light curves (default 1200)")
    ap.add_argument("--batch-size", type=int, help="light curves per Dask task (default: validation.batch's)")
    ap.add_argument("--backends", nargs="+", default=["simple"])
    ap.add_argument("--runs", nargs="+", default=["1:auto", "2:auto", "2:distributed", "1:distributed:4",
                                                   "2:distributed:4"],
                    help="GPUS:CLUSTER[:WORKERS_PER_GPU] per run (cluster: auto, dask-cuda, distributed)")
    ap.add_argument("--tls", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to validation.batch --tls")
    ap.add_argument("--timeout", type=float, default=150, help="seconds per run")
    ap.add_argument("--usd-per-gpu-hour", type=float, default=USD_PER_GPU_HOUR,
                    help=f"price for the cost column (default {USD_PER_GPU_HOUR})")
    ap.add_argument("--stall-dump", type=float, metavar="SECONDS",
                    help="passed to validation.batch: stacks of a worker whose batch runs past SECONDS, in run.log")
    ap.add_argument("--mps", action="store_true",
                    help="run the workers under an NVIDIA MPS daemon of the script's own (validation.mps), quit after")
    ap.add_argument("--work", type=Path, default=Path("/tmp/multigpu"),
                    help="light curves, and per run its Parquet and run.log")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    from backends.gpu import cuda_device_count, gpu_name
    from validation import mps

    args.out.mkdir(parents=True, exist_ok=True)
    inputs = args.work / "curves"
    start = time.perf_counter()
    write_curves(inputs, args.n)
    report = {"n": args.n, "gpu": f"{cuda_device_count()} x {gpu_name(0)}", "tls": args.tls,
              "batch_size": args.batch_size, "dask_cuda": dask_cuda_version(),
              "usd_per_gpu_hour": args.usd_per_gpu_hour,
              "generate_seconds": time.perf_counter() - start, "runs": []}
    print(f"{args.n} light curves in {report['generate_seconds']:.1f} s", flush=True)
    with mps.daemon() if args.mps else contextlib.nullcontext():
        run_all(args, inputs, report)
    ok = all(r["rc"] == 0 and r["distinct_gpus"] and r["parquet"]["ids"] == args.n for r in report["runs"])
    return 0 if ok else 1


def run_all(args, inputs, report):
    """Each backend's runs, ``report`` and its files written again after each."""
    for backend in args.backends:
        for spec in args.runs:
            gpus, cluster, per_gpu = run_spec(spec)
            work = args.work / f"{backend}_{gpus}_{cluster}_{per_gpu}"
            record = run_batch(inputs, work, backend, gpus, cluster, args.tls, args.timeout,
                               args.batch_size, per_gpu, args.usd_per_gpu_hour, args.stall_dump)
            report["runs"].append(record)
            shutil.copy(work / "run.log", args.out / f"{work.name}.log")
            (args.out / "scaling.json").write_text(json.dumps(report, indent=1))
            (args.out / "scaling.md").write_text(table(report))
            print(table(report).splitlines()[-1], flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
