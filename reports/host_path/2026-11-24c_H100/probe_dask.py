"""Throwaway probe (not committed): validation.batch's search_files with pruned,
in this process and in one Dask GPU worker, per-curve wall time."""
import os, sys, time, warnings
warnings.simplefilter("ignore")
import numpy as np


def task(files):
    import os, time, warnings
    warnings.simplefilter("ignore")
    from validation import batch as vb
    t0 = time.perf_counter(); rows = vb.search_files(files, "pruned", {})
    seconds = sorted((r["seconds"] or 0.0, r["id"]) for r in rows)
    if os.environ.get("PER_CURVE"):
        print("per-curve seconds: min %.4f (%s), median %.4f, max %.4f (%s)" % (
            *seconds[0], seconds[len(seconds) // 2][0], *seconds[-1]), flush=True)
    return len(rows), time.perf_counter() - t0


if __name__ == "__main__":
    from benchmarks.host_path import k2_like
    from validation import batch as vb
    n = int(sys.argv[1])
    os.makedirs("/tmp/npz", exist_ok=True)
    files = {}
    if "sim" in sys.argv:  # scripts/multigpu_scaling.py's curves
        from pathlib import Path
        sys.path.insert(0, "scripts")
        from multigpu_scaling import write_curves
        write_curves(Path("/tmp/npz_sim"), n)
        files = {p.stem: str(p) for p in sorted(Path("/tmp/npz_sim").glob("*.npz"))}
    else:
        for k, (t, y, dy) in enumerate(k2_like(n)):
            p = f"/tmp/npz/lc{k}.npz"; np.savez(p, time=t, flux=y, flux_err=dy); files[f"lc{k}"] = p
    if "many" in sys.argv:  # tasks of 64 queued at once on one Dask GPU worker, as validation.batch queues them
        from distributed import Client, as_completed
        items = list(files.items())
        with vb.make_cluster(gpus=1, gpu_cluster="distributed", per_gpu=1) as cluster, Client(cluster) as client:
            client.submit(task, dict(items[:4]), pure=False).result()
            t0 = time.perf_counter(); done = 0
            futures = [client.submit(task, dict(items[k:k + 64]), pure=False) for k in range(0, len(items), 64)]
            for i, f in enumerate(as_completed(futures)):
                m, inner = f.result(); done += m
                if i % 8 == 0:
                    print(f"{done} curves at {time.perf_counter() - t0:.1f} s: task {1e3 * inner / m:.2f} ms/curve",
                          flush=True)
            print(f"many: {1e3 * (time.perf_counter() - t0) / done:.2f} ms/curve", flush=True)
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
