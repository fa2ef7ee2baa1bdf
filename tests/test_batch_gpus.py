"""``python -m validation.batch --gpus N``: one worker per GPU, through dask-cuda
or, without it, distributed's own Nannies; warm-up and the JSON summary.
On CPU the GPU workers search with the ``cpu`` backend; only their
``CUDA_VISIBLE_DEVICES`` differ."""

import json
import os
import re
import sys
import time
import types
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import gpu_available, requires_distributed

from backends import gpu
from validation import batch

OPTIONS = {"period_min": 3.0, "period_max": 6.0}


@pytest.fixture()
def recorded(monkeypatch):
    """Cluster classes replaced by recorders of their arguments (nothing starts)."""
    import distributed

    class Recorder:
        def __init__(self, **kwargs):
            self.kwargs = kwargs

    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = type("LocalCUDACluster", (Recorder,), {})
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    monkeypatch.setattr(distributed, "SpecCluster", type("SpecCluster", (Recorder,), {}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    return fake


def test_devices_follow_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 5")
    assert batch.gpu_devices(2) == ["3", "5"] and batch.gpu_devices(1) == ["3"]
    with pytest.raises(RuntimeError, match=re.escape("--gpus 3: only 2 CUDA device(s) visible")):
        batch.gpu_devices(3)


def test_devices_without_cuda_visible_devices_are_the_drivers(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu, "cuda_device_count", lambda: 2)
    assert batch.gpu_devices(2) == ["0", "1"]
    monkeypatch.setattr(gpu, "cuda_device_count", lambda: 0)
    with pytest.raises(RuntimeError, match=re.escape("only 0 CUDA device(s)")):
        batch.gpu_devices(1)


@requires_distributed
def test_dask_cuda_when_installed(recorded):
    cluster = batch.make_cluster(gpus=2)
    assert type(cluster) is recorded.LocalCUDACluster
    assert cluster.kwargs == {"n_workers": 2, "threads_per_worker": 1, "dashboard_address": ":0",
                              "CUDA_VISIBLE_DEVICES": ["0", "1"], "config": batch.WORKER_CONFIG}
    assert type(batch.make_cluster(gpus=2, gpu_cluster="dask-cuda")) is recorded.LocalCUDACluster


@requires_distributed
@pytest.mark.parametrize("dask_cuda", ["installed", "missing"])
def test_one_nanny_per_gpu_without_dask_cuda_or_when_asked(recorded, monkeypatch, dask_cuda):
    import distributed

    if dask_cuda == "missing":
        monkeypatch.setitem(sys.modules, "dask_cuda", None)  # import raises ImportError
    cluster = batch.make_cluster(gpus=2, gpu_cluster="auto" if dask_cuda == "missing" else "distributed")
    assert type(cluster) is distributed.SpecCluster  # the recorder; a real one starts in the CLI test
    assert cluster.kwargs["workers"] == {
        f"gpu-{d}": {"cls": distributed.Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": d},
                                                          "config": batch.WORKER_CONFIG}}
        for d in ("0", "1")}


@requires_distributed
def test_several_workers_per_gpu_share_it(recorded):
    import distributed

    cluster = batch.make_cluster(gpus=2, per_gpu=2)  # dask-cuda is installed: distributed's Nannies all the same
    assert type(cluster) is distributed.SpecCluster
    assert {name: spec["options"]["env"]["CUDA_VISIBLE_DEVICES"]
            for name, spec in cluster.kwargs["workers"].items()} == {
        "gpu-0-0": "0", "gpu-0-1": "0", "gpu-1-0": "1", "gpu-1-1": "1"}
    with pytest.raises(RuntimeError, match="one worker per GPU"):
        batch.make_cluster(gpus=1, gpu_cluster="dask-cuda", per_gpu=2)
    with pytest.raises(SystemExit):
        batch.parse_args(["--workers-per-gpu", "2", "--out", "o", "x"])
    with pytest.raises(SystemExit):
        batch.parse_args(["--gpus", "1", "--workers-per-gpu", "0", "--out", "o", "x"])
    assert batch.parse_args(["--gpus", "1", "--workers-per-gpu", "3", "--out", "o", "x"]).workers_per_gpu == 3


@requires_distributed
@pytest.mark.parametrize("gpus", [None, 1])
def test_workers_run_without_the_sampling_profiler(monkeypatch, gpus):
    """Dask's profiler held a task thread's frames in the worker's event loop,
    where a search's device memory then went (a worker aborted on the H100)."""
    import dask
    from distributed import Client

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with batch.make_cluster(workers=1, gpus=gpus, gpu_cluster="distributed") as cluster, Client(cluster) as client:
        client.wait_for_workers(1)
        seen = client.run(lambda dask_worker: (dask.config.get("distributed.worker.profile.enabled"),
                                               "profile" in dask_worker.periodic_callbacks,
                                               dask.config.get("distributed.scheduler.work-stealing")))
    assert list(seen.values()) == [(False, False, True)]  # the rest of the configuration as it was


@requires_distributed
def test_workers_may_start_their_reader_process(npz_inputs):
    """Not daemonic (a daemonic process may not start children), so a worker's
    files are read by its reader process, which ends with the worker's release."""
    import multiprocessing

    from distributed import Client

    def read_apart(path):
        reader = batch.Reader()
        item, = reader.items({"a": path})
        pid = next(iter(reader._pool._processes))
        reader.close()
        return multiprocessing.current_process().daemon, pid != os.getpid(), item["id"]

    path = str(next(npz_inputs.glob("*.npz")))
    with batch.make_cluster(workers=1) as cluster, Client(cluster) as client:
        client.wait_for_workers(1)
        assert client.submit(read_apart, path).result() == (False, True, "a")


@requires_distributed
def test_a_worker_that_aborts_fails_its_batch_and_a_rerun_searches_what_is_missing(npz_inputs, tmp_path,
                                                                                   monkeypatch):
    """A worker process that aborts (PyCUDA's pool once did) is restarted; the
    batch it aborted on fails unrecorded (and so may a batch queued on it
    meanwhile), and a re-run searches exactly what is missing."""
    import os

    from distributed import Client

    def run_on_one_gpu_worker():
        with batch.make_cluster(gpus=1, gpu_cluster="distributed") as cluster, Client(cluster) as client:
            return batch.run([npz_inputs], tmp_path / "out", client, "cpu", batch_size=1, options=OPTIONS,
                             progress=False)

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    search = batch.search_files
    monkeypatch.setattr(batch, "search_files",  # pickled by value to the worker
                        lambda files, *args: os.abort() if "lc1" in files else search(files, *args))
    first = run_on_one_gpu_worker()
    done = batch.ResultDataset(tmp_path / "out").done_ids()
    assert "lc1" not in done and first["searched"] == len(done) and first["failed_batches"] == 3 - len(done)
    monkeypatch.setattr(batch, "search_files", search)
    again = run_on_one_gpu_worker()
    assert (again["skipped"], again["searched"], again["failed_batches"]) == (len(done), 3 - len(done), 0)
    assert batch.ResultDataset(tmp_path / "out").done_ids() == {"lc0", "lc1", "lc2"}


@requires_distributed
def test_batches_left_without_workers_fail_instead_of_waiting(npz_inputs, tmp_path, monkeypatch):
    """A Nanny that closes after its worker died again and again (distributed
    does, at times) leaves no worker: the batches then fail after
    NO_WORKERS_TIMEOUT, unrecorded, instead of waiting for ever."""
    from distributed import Client

    monkeypatch.setattr(batch, "NO_WORKERS_TIMEOUT", "1s")
    with batch.make_cluster(workers=1) as cluster, Client(cluster) as client:
        cluster.scale(0)
        while client.scheduler_info()["workers"]:
            time.sleep(0.05)
        waiting = ThreadPoolExecutor(1)  # a run that waits for ever fails the test after a minute
        try:
            summary = waiting.submit(batch.run, [npz_inputs], tmp_path / "out", client, "cpu", batch_size=2,
                                     options=OPTIONS, progress=False).result(timeout=60)
        finally:
            waiting.shutdown(wait=False)
    assert (summary["searched"], summary["failed_batches"]) == (0, 2)
    assert batch.ResultDataset(tmp_path / "out").done_ids() == set()


@requires_distributed
def test_dask_cuda_asked_but_missing(recorded, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    with pytest.raises(RuntimeError, match="--gpu-cluster dask-cuda needs dask-cuda"):
        batch.make_cluster(gpus=1, gpu_cluster="dask-cuda")


def test_gpu_cluster_needs_gpus():
    with pytest.raises(SystemExit):
        batch.parse_args(["--gpu-cluster", "distributed", "--out", "o", "x"])
    with pytest.raises(SystemExit):
        batch.parse_args(["--gpus", "1", "--gpu-cluster", "cuda", "--out", "o", "x"])


def test_pci_bus_id_names_the_gpu():
    bus_id = gpu.gpu_pci_bus_id(0)
    if gpu_available():
        assert re.fullmatch(r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]", bus_id)
    else:
        assert bus_id is None


@requires_distributed
def test_cli_two_gpu_workers_each_with_its_device(npz_inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # what each worker is handed; the cpu backend searches
    # GPU 1 may not exist here: no NVML diagnostics in the workers. The setting, not its
    # environment variable: dask reads those once per process (another test may have imported it).
    # distributed imported first: its defaults hold the setting, which is then put back, not deleted (a
    # later cluster of this process found no "nvml" setting and its Nanny failed to start).
    import dask
    import distributed  # noqa: F401

    monkeypatch.setitem(dask.config.config["distributed"]["diagnostics"], "nvml", False)
    out, summary = tmp_path / "out", tmp_path / "summary.json"
    argv = ["--gpus", "2", "--backend", "cpu", "--batch-size", "1", "--warmup", "--summary", str(summary),
            "--no-progress", "--out", str(out), "--tls", "period_min=3.0", "--tls", "period_max=6.0",
            str(npz_inputs)]
    assert batch.main(argv) == 0
    assert "distributed.SpecCluster of 2 workers" in capsys.readouterr().err
    report = json.loads(summary.read_text())
    assert report["cluster"] == "distributed.SpecCluster" and report["searched"] == 3
    workers = list(report["workers"].values())
    assert sorted(w["CUDA_VISIBLE_DEVICES"] for w in workers) == ["0", "1"]
    assert len({w["pid"] for w in workers}) == 2 and all(w["warmup_seconds"] > 0 for w in workers)
    assert report["per_second"] > 0 and len(batch.ResultDataset(out).read()) == 3


@requires_distributed
def test_a_run_leaves_no_backend_behind_in_its_workers(npz_inputs, tmp_path):
    """Each worker lets its backends go in its task thread at the end of a run
    (``release_worker``): a PyCUDA backend's device memory, modules and buffers
    then go in its context's thread, not at the worker's exit."""
    from distributed import Client

    with batch.make_cluster(workers=2) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        summary = batch.run([npz_inputs], tmp_path / "out", client, "cpu", batch_size=1, options=OPTIONS,
                            progress=False, warmup=True)
        held = client.run(lambda: batch.worker_backend.cache_info().currsize)
    assert summary["searched"] == 3 and list(held.values()) == [0, 0]


@requires_distributed
def test_a_failed_warm_up_names_the_worker(npz_inputs, tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    monkeypatch.setattr(batch, "search_files", divmod)  # raises TypeError on the worker
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        with pytest.raises(RuntimeError, match=r"warm-up on worker .* failed: TypeError"):
            batch.run([npz_inputs], tmp_path / "out", client, "cpu", options=OPTIONS, progress=False, warmup=True)
    assert batch.ResultDataset(tmp_path / "out").done_ids() == set()


@pytest.mark.gpu
@pytest.mark.skipif(gpu.cuda_device_count() < 2, reason="needs two CUDA GPUs")
@pytest.mark.parametrize("gpu_cluster", ["distributed", "auto"])
def test_each_worker_on_its_own_gpu(gpu_cluster):
    from distributed import Client

    with batch.make_cluster(gpus=2, gpu_cluster=gpu_cluster) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        bus_ids = sorted(w["pci_bus_id"] for w in client.run(batch.worker_identity).values())
    assert bus_ids == sorted(gpu.gpu_pci_bus_id(i) for i in range(2))


@requires_distributed
@pytest.mark.parametrize("per_gpu, daemon, said", [(2, False, True), (2, True, False), (1, False, False)])
def test_workers_sharing_a_gpu_without_mps_are_told_their_contexts_take_turns(npz_inputs, monkeypatch, capsys,
                                                                              tmp_path, per_gpu, daemon, said):
    from validation import mps

    monkeypatch.setattr(mps, "pipe_directory", lambda: "/tmp/nvidia-mps" if daemon else None)
    monkeypatch.setattr(batch, "make_cluster", lambda *a: (_ for _ in ()).throw(RuntimeError("no cluster here")))
    argv = ["--gpus", "1", "--workers-per-gpu", str(per_gpu), "--backend", "cpu", "--out", str(tmp_path / "o"),
            str(npz_inputs)]
    assert batch.main(argv) == 2
    err = capsys.readouterr().err
    assert "error: no cluster here" in err
    assert ("without an MPS daemon: their CUDA contexts take turns" in err) == said
