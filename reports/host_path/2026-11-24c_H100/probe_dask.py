"""Throwaway probe (not committed): validation.batch's search_files with pruned,
in this process and in one Dask GPU worker, per-curve wall time."""
import os, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np


def task(files):
    import time, warnings
    warnings.simplefilter("ignore")
    from validation import batch as vb
    t0 = time.perf_counter(); rows = vb.search_files(files, "pruned", {})
    return len(rows), time.perf_counter() - t0


if __name__ == "__main__":
    from benchmarks.host_path import k2_like
    from validation import batch as vb
    n = int(sys.argv[1])
    os.makedirs("/tmp/npz", exist_ok=True)
    files = {}
    for k, (t, y, dy) in enumerate(k2_like(n)):
        p = f"/tmp/npz/lc{k}.npz"; np.savez(p, time=t, flux=y, flux_err=dy); files[f"lc{k}"] = p
    if "inproc" in sys.argv:
        task(dict(list(files.items())[:4]))
        for _ in range(int(os.environ.get("BLOCKS", 2))):
            t0 = time.perf_counter(); m, inner = task(files)
            print(f"in process: {1e3*(time.perf_counter()-t0)/m:.2f} ms/curve", flush=True)
    if "dask" in sys.argv:
        from distributed import Client
        with vb.make_cluster(gpus=1, gpu_cluster="distributed", per_gpu=1) as cluster, Client(cluster) as client:
            import contextlib
            from validation.monitor import Sampler
            client.submit(task, dict(list(files.items())[:4]), pure=False).result()
            for monitor in [False] * int(os.environ.get("BLOCKS", 4)):
                with Sampler(1.0) if monitor else contextlib.nullcontext():
                    t0 = time.perf_counter(); m, inner = client.submit(task, files, pure=False).result()
                print(f"dask 1 GPU worker, monitor {monitor}: {1e3*(time.perf_counter()-t0)/m:.2f} ms/curve wall, "
                      f"{1e3*inner/m:.2f} inside the task", flush=True)
            half = dict(list(files.items())[: len(files) // 5])
            t0 = time.perf_counter()
            futures = [client.submit(task, dict(list(files.items())[k:k + 64]), pure=False) for k in range(0, len(files), 64)]
            m = sum(f.result()[0] for f in futures)
            print(f"dask 1 GPU worker, tasks of 64: {1e3*(time.perf_counter()-t0)/m:.2f} ms/curve wall", flush=True)
