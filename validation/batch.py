"""Many light curves over many workers: ``python -m validation.batch``.

    python -m validation.batch [--workers N | --gpus N [--workers-per-gpu K] [--gpu-cluster KIND]] --backend NAME \\
        --out results.parquet [--batch-size B] [--tls KEY=VALUE ...] [--warmup] [--summary FILE] \\
        [--monitor SECONDS] [--usd-per-gpu-hour PRICE] [--stall-dump SECONDS] <.npz files or directories of them>

Each ``.npz`` holds one light curve (``time``, ``flux``, optional ``flux_err``);
its id is the file name without ``.npz``. Batches of light curves are mapped
over a Dask cluster, not a scheduler of our own: a ``LocalCluster`` of N
single-threaded worker processes, or with ``--gpus N`` one single-threaded
worker per GPU: dask-cuda's ``LocalCUDACluster``, or where dask-cuda is not
installed (or ``--gpu-cluster distributed``) distributed's ``SpecCluster`` of
one ``Nanny`` per GPU, each with its own ``CUDA_VISIBLE_DEVICES``; the run
says which. ``--workers-per-gpu K`` puts K Nannies on each GPU (distributed's
cluster): the host's part of each search then runs K-fold in parallel. Each worker runs ``backends.search_batch`` in its lean
mode (TLS's values, no model light curves or folded arrays), so a bad light
curve gives an error row and the rest of its batch goes on.

``--warmup`` first searches one light curve on every worker, untimed, so
kernel builds and GPU contexts do not count against the rate; ``--summary``
writes the counts, the rate, the cluster and each worker's process, GPU
(PCI bus id) and warm-up seconds as JSON; with ``--monitor`` also each GPU's
busy share and peak memory and the peak resident memory of the run's
processes (``validation.monitor``, sampled during the timed part), with
``--usd-per-gpu-hour`` the cost of a million light curves at that price.
``--stall-dump SECONDS``: a worker whose batch runs longer than that writes
the Python stack of each of its threads to its standard error (``faulthandler``),
once per batch, and goes on: what a stalled run was waiting on.

A worker searching with a GPU backend has its files read by a process of its
own (``validation.npz_files.Reader``): read in the worker, they took the GIL
that feeds the GPU. Workers are therefore not daemonic (``cluster_config``).

Workers run without Dask's sampling profiler (``WORKER_CONFIG``): it reads
each task thread's stack 100 times a second in the worker's event loop, GIL
time taken from the searches, and holds a returned search's frames there. At
the end of a run each worker lets its backends, compiled modules and
page-locked buffers go in its task thread (``release_worker``), the thread of
their GPU context, where PyCUDA can free them.

``--out`` is a directory, a Parquet dataset with one file per finished batch,
each written to a hidden temporary file and renamed, so a crash loses at most
the batches in flight. A re-run with the same backend and options skips the
ids already there; ``pandas.read_parquet(out)`` reads them all. Exit status 1
when a whole batch failed (e.g. a worker died, or every worker was gone for
``NO_WORKERS_TIMEOUT``); its ids are not recorded, so a re-run tries them again.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import faulthandler
import functools
import gc
import hashlib
import json
import math
import os
import sys
import time
from pathlib import Path

from validation import mps, store
from validation.npz_files import Reader, load_npz  # noqa: F401 (load_npz: this module's API)

SCHEMA_FIELDS = (
    ("id", "string"), ("period", "float64"), ("T0", "float64"), ("duration", "float64"),
    ("depth", "float64"), ("SDE", "float64"), ("SNR", "float64"), ("FAP", "float64"),
    ("backend", "string"), ("seconds", "float64"), ("error", "string"),
)
TLS_KEYS = {"period": "period", "T0": "T0", "duration": "duration", "depth": "depth",
            "SDE": "SDE", "SNR": "snr", "FAP": "FAP"}  # column -> TLS results key


def find_inputs(paths):
    """id -> path of every ``.npz`` named or inside a named directory."""
    found = {}
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(path.glob("*.npz"))
        elif path.suffix == ".npz" and path.is_file():
            files = [path]
        else:
            raise ValueError(f"{path}: not an .npz file or a directory of them")
        for f in files:
            if f.stem in found:
                raise ValueError(f"two light curves with id {f.stem!r}: {found[f.stem]} and {f}")
            found[f.stem] = f
    if not found:
        raise ValueError(f"no .npz light curves in {', '.join(map(str, paths))}")
    return found


def summary_row(outcome, backend):
    """One Parquet row of a ``search_batch`` outcome."""
    from backends import BatchError

    if isinstance(outcome, BatchError):
        row = dict.fromkeys(name for name, _ in SCHEMA_FIELDS)
        return {**row, "id": str(outcome.id), "backend": backend,
                "error": f"{outcome.error}: {outcome.message}"}
    meta = outcome.meta
    return {"id": str(meta["id"]), **{col: float(outcome[key]) for col, key in TLS_KEYS.items()},
            "backend": meta["backend"], "seconds": meta["timings"]["total"], "error": None}


READER = Reader()  # this worker process's reader (``search_files``), ended by ``release_worker``
RELEASE_TIMEOUT_S = 10  # a worker gone at the end of a run is not waited for longer


@functools.lru_cache(maxsize=None)
def worker_backend(name):
    """The backend a worker process searches with (``runs.searcher``), made once per process."""
    from validation import runs

    return runs.searcher(name)


def release_worker():
    """Worker task: let the worker's backends, compiled modules and page-locked
    buffers go in its task thread, the thread of their GPU context (at the
    worker's exit PyCUDA could not free them there and warned four times),
    and end its reader process."""
    from backends.implementations.pycuda_base import release_cached
    from backends.registry import release_instances

    worker_backend.cache_clear()
    READER.close()
    release_instances()
    release_cached()
    gc.collect()


def release_workers(client, workers):
    """``release_worker`` on each of ``workers`` (addresses); one that is gone
    (a worker restarted under a new address) is skipped after RELEASE_TIMEOUT_S."""
    from distributed import wait

    futures = [client.submit(release_worker, workers=[w], allow_other_workers=False, pure=False) for w in workers]
    try:
        wait(futures, timeout=RELEASE_TIMEOUT_S)
    except TimeoutError:
        pass
    finally:
        client.cancel(futures)


@contextlib.contextmanager
def stacks_if_still_running(seconds):
    """Every thread's Python stack to standard error if the block is still
    running after ``seconds`` (None: never); nothing is stopped."""
    if not seconds:
        yield
        return
    faulthandler.dump_traceback_later(seconds)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


def search_files(files, backend, options, stall_dump=None):
    """Worker task: summary rows of the light curves ``files`` (id -> path);
    with ``stall_dump``, ``stacks_if_still_running(stall_dump)``. A GPU
    backend's worker has its files read by a process of its own (``READER``)
    while it searches: read here, they took the GIL that feeds the GPU."""
    from backends import BatchError, search_batch
    from backends.gpu import cuda_device_count

    searcher = worker_backend(backend)
    apart = cuda_device_count() > 0 if searcher == "auto" else searcher.device != "cpu"  # auto: a GPU's if any
    rows = []

    def readable():
        for item in READER.items(files, here=not apart):
            if isinstance(item, BatchError):
                rows.append(summary_row(item, backend))
            else:
                yield item

    with stacks_if_still_running(stall_dump):
        outcomes = search_batch(readable(), backend=searcher, lean=True, **options)
    return rows + [summary_row(o, backend) for o in outcomes]


class ResultDataset(store.RecordDir):
    """The ``--out`` directory: one Parquet file per finished batch."""

    def __init__(self, path):
        super().__init__(path, suffix=".parquet")

    def check_run(self, backend, options):
        """Record (or, on a re-run, match) the backend and options of the results."""
        self.stamp({"backend": backend, "options": options})

    def done_ids(self):
        import pyarrow.parquet as pq

        return {i for key in self.keys("part-")
                for i in pq.read_table(self.path(key), columns=["id"])["id"].to_pylist()}

    def write(self, rows):
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in SCHEMA_FIELDS])
        table = pa.Table.from_pylist(rows, schema=schema)
        name = hashlib.sha1("\n".join(sorted(r["id"] for r in rows)).encode()).hexdigest()[:16]
        self.write_file(f"part-{name}", lambda tmp: pq.write_table(table, tmp))  # hidden until renamed

    def read(self):
        import pandas as pd

        return pd.read_parquet(self.directory)



def check_request(backend, options):
    """Fail before mapping anything when ``backend`` cannot run on this host or
    an option is not one of transitleastsquares' ``power()``."""
    from backends import BackendUnavailable, available_backends
    from backends.inputs import check_options

    check_options(options)
    why = available_backends() if backend != "auto" else {}
    if backend != "auto" and backend not in why:
        raise ValueError(f"unknown backend {backend!r}; known: auto, {', '.join(why)}")
    if why.get(backend):
        raise BackendUnavailable(f"backend {backend!r} cannot run here: {why[backend]}")


def gpu_devices(gpus):
    """The CUDA devices of the first ``gpus`` workers, one each: those of
    ``CUDA_VISIBLE_DEVICES`` where it is set, else all the driver sees."""
    from backends import gpu

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        devices = [str(i) for i in range(gpu.cuda_device_count())]
    else:
        devices = [d.strip() for d in visible.split(",") if d.strip()]
    if gpus > len(devices):
        raise RuntimeError(f"--gpus {gpus}: only {len(devices)} CUDA device(s) visible "
                           f"(CUDA_VISIBLE_DEVICES={visible})")
    return devices[:gpus]


WORKER_CONFIG = {"distributed.worker.profile.enabled": False}  # a dotted key: Nannies merge it shallowly
# Read as a cluster starts and as a Nanny (re)starts its worker. A batch left with no worker for
# NO_WORKERS_TIMEOUT fails (its ids are searched again by a re-run) instead of waiting for ever: a worker
# process that dies again and again is not restarted for good. Workers are not daemonic, so that each may
# start its reader process (``READER``); a worker still ends with its Nanny (distributed's parent watch).
NO_WORKERS_TIMEOUT = "60s"


def cluster_config() -> dict:
    """Dask's configuration while a cluster of ``make_cluster`` starts and lives."""
    return {"distributed.scheduler.no-workers-timeout": NO_WORKERS_TIMEOUT, "distributed.worker.daemon": False}


def make_cluster(workers=None, gpus=None, gpu_cluster="auto", per_gpu=1):
    """A Dask cluster: ``per_gpu`` single-threaded workers on each of ``gpus``
    GPUs, or ``workers`` single-threaded worker processes. ``gpu_cluster``:
    "dask-cuda" (``LocalCUDACluster``, one worker per GPU), "distributed" (a
    ``SpecCluster`` of ``Nanny``s, each with its ``CUDA_VISIBLE_DEVICES``) or
    "auto" (dask-cuda if installed and ``per_gpu`` is 1). Several workers per
    GPU share it: the host's part of a search (TLS's grids and statistics,
    Python under the GIL) then runs in parallel while the GPU serves them in turn."""
    import dask

    with dask.config.set(cluster_config()):
        return _make_cluster(workers, gpus, gpu_cluster, per_gpu)


def _make_cluster(workers, gpus, gpu_cluster, per_gpu):
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

    if not gpus:
        return LocalCluster(n_workers=workers or os.cpu_count(), threads_per_worker=1,
                            processes=True, dashboard_address=":0", config=WORKER_CONFIG)
    devices = gpu_devices(gpus)
    if per_gpu > 1 and gpu_cluster == "dask-cuda":
        raise RuntimeError("dask-cuda runs one worker per GPU; --workers-per-gpu needs "
                           "--gpu-cluster distributed (or auto)")
    if gpu_cluster != "distributed" and per_gpu == 1:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError as exc:
            if gpu_cluster == "dask-cuda":
                raise RuntimeError("--gpu-cluster dask-cuda needs dask-cuda (pip install dask-cuda); "
                                   "--gpu-cluster distributed needs only distributed") from exc
        else:
            return LocalCUDACluster(n_workers=gpus, threads_per_worker=1, dashboard_address=":0",
                                    CUDA_VISIBLE_DEVICES=devices, config=WORKER_CONFIG)
    spec = {f"gpu-{device}" + (f"-{k}" if per_gpu > 1 else ""): {"cls": Nanny, "options": {
        "nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": device}, "config": WORKER_CONFIG}}
        for device in devices for k in range(per_gpu)}
    return SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}})


def cluster_name(cluster):
    """"package.Class" of a cluster, e.g. "dask_cuda.LocalCUDACluster"."""
    return f"{type(cluster).__module__.partition('.')[0]}.{type(cluster).__name__}"


def worker_identity():
    """Worker task: its process id, ``CUDA_VISIBLE_DEVICES`` and the PCI bus id
    of its CUDA device 0, the GPU it searches on (None without a GPU)."""
    from backends.gpu import gpu_pci_bus_id

    return {"pid": os.getpid(), "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "pci_bus_id": gpu_pci_bus_id(0)}


def warm_up(client, workers, curve, backend, options):
    """Search light curve ``curve`` (id, path) once on each of ``workers``,
    recording nothing: seconds each took (its cold start: context, kernel builds)."""
    from distributed import as_completed

    start = time.perf_counter()
    futures = {client.submit(search_files, dict([curve]), backend, options, workers=[w],
                             allow_other_workers=False, pure=False): w for w in workers}
    seconds = {}
    try:
        for future in as_completed(futures):
            try:
                future.result()
            except Exception as exc:
                raise RuntimeError(f"warm-up on worker {futures[future]} failed: "
                                   f"{type(exc).__name__}: {exc}") from exc
            seconds[futures[future]] = time.perf_counter() - start
    finally:
        client.cancel(list(futures))
    return seconds


def run(inputs, out, client, backend="auto", batch_size=16, options=None, progress=True,
        warmup=False, monitor=None, stall_dump=None):
    """Search every light curve of ``inputs`` not yet in ``out`` on ``client``'s
    workers, writing each batch's rows as it finishes; with ``warmup``, each
    worker searches one first, untimed; with ``monitor`` (seconds), the GPUs
    and the memory of this process's tree are sampled meanwhile; with
    ``stall_dump`` (seconds), see ``search_files``. Returns counts, rate,
    workers (and resources)."""
    from distributed import as_completed
    from tqdm import tqdm

    from validation.monitor import Sampler

    options = dict(options or {})
    check_request(backend, options)
    found = find_inputs(inputs)
    dataset = ResultDataset(out)
    dataset.check_run(backend, options)
    done = dataset.done_ids()
    todo = [i for i in found if i not in done]
    batches = [todo[k:k + batch_size] for k in range(0, len(todo), batch_size)]
    workers = client.run(worker_identity)
    if warmup and todo:
        cold = warm_up(client, workers, (todo[0], str(found[todo[0]])), backend, options)
        workers = {w: {**who, "warmup_seconds": cold[w]} for w, who in workers.items()}
    start = time.perf_counter()
    futures = {client.submit(search_files, {i: str(found[i]) for i in batch}, backend, options, stall_dump,
                             pure=False): batch for batch in batches}
    summary = {"searched": 0, "errors": 0, "skipped": len(found) - len(todo), "failed_batches": 0,
               "workers": workers}
    try:
        with tqdm(total=len(todo), unit="lc", disable=not progress) as bar, \
                Sampler(monitor) if monitor else contextlib.nullcontext() as sampler:
            for future in as_completed(futures):
                try:
                    rows = future.result()
                except Exception as exc:
                    summary["failed_batches"] += 1
                    bar.write(f"batch {futures[future][0]}..: {type(exc).__name__}: {exc}")
                    continue
                dataset.write(rows)
                summary["searched"] += len(rows)
                summary["errors"] += sum(r["error"] is not None for r in rows)
                bar.update(len(rows))
    finally:
        client.cancel(list(futures))
    summary["seconds"] = time.perf_counter() - start
    release_workers(client, workers)
    summary["per_second"] = summary["searched"] / summary["seconds"] if todo else math.nan
    if sampler is not None:
        summary["resources"] = {"interval_s": monitor, "gpus": sampler.summary(), "apps": sampler.apps,
                                "host_peak_rss_mib": sampler.host_peak_mib()}
    return summary


def cost(summary, gpus, usd_per_gpu_hour) -> dict:
    """What a million light curves cost at the run's rate on ``gpus`` GPUs."""
    per_million = (gpus * usd_per_gpu_hour * summary["seconds"] / 3600 / summary["searched"] * 1e6
                   if summary["searched"] else None)
    return {"usd_per_gpu_hour": usd_per_gpu_hour, "gpus": gpus, "usd_per_million_curves": per_million}


def resources_line(summary) -> str:
    """The run's GPU use, peak memory and cost, as far as measured."""
    parts = []
    for bus, gpu in summary.get("resources", {}).get("gpus", {}).items():
        clock = (f", SM clock {gpu['busy_sm_mhz']:.0f} of {gpu['max_sm_mhz']:.0f} MHz"
                 if gpu.get("busy_sm_mhz") is not None and gpu.get("max_sm_mhz") is not None else "")
        parts.append(f"GPU {bus}: busy {gpu['mean_util_pct']:.0f} % of {gpu['samples']} samples, "
                     f"peak {gpu['max_used_mib']:.0f} MiB{clock}")
    host = summary.get("resources", {}).get("host_peak_rss_mib")
    if host is not None:
        parts.append(f"host peak {host:.0f} MiB")
    per_million = summary.get("cost", {}).get("usd_per_million_curves")
    if per_million is not None:
        parts.append(f"${per_million:.2f} per million light curves at "
                     f"${summary['cost']['usd_per_gpu_hour']:.2f} per GPU-hour")
    return "; ".join(parts)


# Light curves per task. A GPU worker's task ramps its pipeline up at the start (search_batch's chunks
# 1, 2, 4, ...) and drains it at the end (the last chunk's statistics, the device idle): one H200 worker
# searched 272 K2-like curves/s in tasks of 64, 297/s in tasks of 256 (reports/gpu/survey_reads_2026-12-03_H200,
# call 1). A CPU curve takes ~0.3 s.
BATCH_SIZE = {"cpu": 16, "gpu": 256}


def tls_option(text):
    """(key, value) of a "KEY=VALUE" transitleastsquares power() option; the value as a
    Python literal where it is one (period_max=10 -> 10), else as text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--tls wants KEY=VALUE, got {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m validation.batch", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, help="CPU worker processes (default: one per core)")
    where.add_argument("--gpus", type=int, help="GPUs, one worker each")
    p.add_argument("--workers-per-gpu", type=int, default=1,
                   help="with --gpus: workers sharing each GPU (default 1; more feed it faster "
                        "where the host's part of a search is the limit)")
    p.add_argument("--gpu-cluster", choices=("auto", "dask-cuda", "distributed"), default="auto",
                   help="with --gpus: dask-cuda's LocalCUDACluster, distributed's SpecCluster of "
                        "one Nanny per GPU, or auto (default: dask-cuda if installed)")
    p.add_argument("--backend", default="auto", help="backend name or 'auto' (default)")
    p.add_argument("--out", required=True, help="Parquet dataset directory (resumed if it exists)")
    p.add_argument("--batch-size", type=int,
                   help=f"light curves per task (default {BATCH_SIZE['cpu']}, with --gpus {BATCH_SIZE['gpu']})")
    p.add_argument("--tls", type=tls_option, action="append", default=[], metavar="KEY=VALUE",
                   help="a transitleastsquares power() option, e.g. period_max=10 (repeatable)")
    p.add_argument("--warmup", action="store_true",
                   help="search one light curve on every worker first, untimed")
    p.add_argument("--summary", help="write counts, rate and workers to this JSON file")
    p.add_argument("--monitor", type=float, metavar="SECONDS",
                   help="sample GPU use and memory and the run's host memory every SECONDS (into --summary)")
    p.add_argument("--usd-per-gpu-hour", type=float, metavar="PRICE",
                   help="with --gpus: the cost of a million light curves at PRICE per GPU-hour")
    p.add_argument("--stall-dump", type=float, metavar="SECONDS",
                   help="a worker whose batch runs longer than SECONDS writes its threads' stacks to its stderr")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("inputs", nargs="+", help=".npz files or directories of them")
    args = p.parse_args(argv)
    if args.batch_size is None:
        args.batch_size = BATCH_SIZE["gpu" if args.gpus else "cpu"]
    for name in ("workers", "gpus", "batch_size", "workers_per_gpu"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if (args.gpu_cluster != "auto" or args.workers_per_gpu > 1 or args.usd_per_gpu_hour) and not args.gpus:
        p.error("--gpu-cluster, --workers-per-gpu and --usd-per-gpu-hour need --gpus")
    for name in ("monitor", "usd_per_gpu_hour", "stall_dump"):
        if getattr(args, name) is not None and getattr(args, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    try:
        check_request(args.backend, dict(args.tls))  # fail before starting a cluster
        find_inputs(args.inputs)
        ResultDataset(args.out).check_run(args.backend, dict(args.tls))
        try:
            from distributed import Client
        except ImportError as exc:
            raise RuntimeError(f"python -m validation.batch runs on Dask ({exc}): "
                               "pip install distributed (and dask-cuda for --gpus)") from exc
        import dask
        # transitleastsquares' gufuncs compiled and cached here, once, not by workers racing (numba #10128)
        import transitleastsquares  # noqa: F401

        if args.workers_per_gpu > 1 and mps.pipe_directory() is None:
            print(f"{args.workers_per_gpu} workers a GPU without an MPS daemon: their CUDA contexts take turns "
                  "on the GPU (NVIDIA MPS shares one: see validation/mps.py)", file=sys.stderr)
        with dask.config.set(cluster_config()), make_cluster(args.workers, args.gpus, args.gpu_cluster,
                                                           args.workers_per_gpu) as cluster, Client(cluster) as client:
            client.wait_for_workers(len(cluster.worker_spec))
            print(f"{cluster_name(cluster)} of {len(cluster.worker_spec)} workers, "
                  f"dashboard {client.dashboard_link}", file=sys.stderr)
            summary = run(args.inputs, args.out, client, args.backend, args.batch_size,
                          dict(args.tls), progress=not args.no_progress, warmup=args.warmup,
                          monitor=args.monitor, stall_dump=args.stall_dump)
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary["mps"] = mps.pipe_directory()
    if args.usd_per_gpu_hour:
        summary["cost"] = cost(summary, args.gpus, args.usd_per_gpu_hour)
    if args.summary:
        Path(args.summary).write_text(json.dumps({**summary, "cluster": cluster_name(cluster)}, indent=1))
    print(f"{summary['searched']} light curves searched ({summary['errors']} errors), "
          f"{summary['skipped']} already done, {summary['failed_batches']} batches failed; "
          f"{summary['seconds']:.1f} s, {summary['per_second']:.2f} per second -> {args.out}")
    if resources_line(summary):
        print(resources_line(summary))
    return 1 if summary["failed_batches"] else 0


if __name__ == "__main__":
    from validation.batch import main as _main  # workers unpickle tasks from the module, not __main__

    sys.exit(_main())
