"""``backends.search_batch`` and ``python -m validation.batch`` (Dask, Parquet, resume)."""

import functools
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import box_light_curve, requires_distributed

import backends
from backends import BatchError, search_batch
from validation import batch, npz_files

OPTIONS = {"period_min": 3.0, "period_max": 6.0}  # a narrow grid keeps each search ~0.2 s


@pytest.fixture(scope="module")
def curves():
    return [box_light_curve(days=16.0, seed=k) for k in range(3)]


def test_order_kept_and_one_bad_curve_is_its_own_error(curves):
    t, y, dy = curves[1]
    bad_dy = np.where(np.arange(t.size) == 5, -1.0, dy)
    items = [curves[0], {"id": "bad", "t": t, "y": y, "dy": bad_dy}, (t, y), {"id": "x", "time": t, "flux": y}]
    out = search_batch(items, backend="cpu", **OPTIONS)
    assert [type(o) for o in out] == [type(out[0]), BatchError, type(out[0]), type(out[0])]
    assert isinstance(out[1], BatchError) and out[1].id == "bad" and out[1].error == "ValueError"
    assert "flux errors are <= 0" in out[1].message and "'bad'" in str(out[1])
    assert [out[k].meta["id"] for k in (0, 2, 3)] == [0, 2, "x"]
    assert out[0].period == pytest.approx(4.3, rel=0.01)
    assert out[2].period == backends.search(t, y, backend="cpu", **OPTIONS).period


def test_malformed_items_are_errors(curves):
    class LC:
        def __init__(self, t, y, dy):
            self.time, self.flux, self.flux_err = t, y, dy

    out = search_batch([(1.0,), {"id": 7, "flux": [1.0]}, LC(*curves[0])], backend="cpu", **OPTIONS)
    assert "(t, y) or (t, y, dy)" in out[0].message
    assert out[1].id == 7 and "'t' and 'y'" in out[1].message
    assert out[2].meta["id"] == 2 and out[2].meta["requested_backend"] == "cpu"


def test_one_backend_instance_with_per_curve_timings(curves, monkeypatch):
    from backends.implementations.cpu import CPUBackend

    made, init = [], CPUBackend.__init__
    monkeypatch.setattr(CPUBackend, "__init__", lambda self: made.append(self) or init(self))
    out = search_batch(curves, backend="cpu", **OPTIONS)
    assert len(made) == 1
    totals = [o.meta["timings"]["chi2_scan"] for o in out]
    assert all(0 < s < o.meta["timings"]["total"] for s, o in zip(totals, out))  # not accumulated


def test_the_gil_changes_hands_promptly_while_batches_run(curves):
    """The switch interval is at most SWITCH_INTERVAL_S during a batch and the
    process's own after it; batches overlapping in two threads (the first to
    start ends first) keep it short until the last one ends."""
    from backends import batch as module
    from backends.implementations.cpu import CPUBackend

    seen = []

    class Watched(CPUBackend):
        def search(self, plan, periods, progress=None):
            seen.append(sys.getswitchinterval())
            return super().search(plan, periods, progress)

    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    try:
        search_batch(curves[:1], backend=Watched(), **OPTIONS)
        assert seen == [module.SWITCH_INTERVAL_S] and sys.getswitchinterval() == 0.005
        handover = module.PROMPT_HANDOVER
        handover.__enter__()  # batch A
        handover.__enter__()  # batch B, in another thread
        handover.__exit__(None, None, None)  # A ends first
        assert sys.getswitchinterval() == module.SWITCH_INTERVAL_S
        handover.__exit__(None, None, None)  # B ends
        assert sys.getswitchinterval() == 0.005
    finally:
        sys.setswitchinterval(before)


def test_lean_results_are_the_full_ones_without_folded_arrays(curves):
    from backends.statistics import FOLDED_KEYS

    full, lean = (search_batch(curves[:2], backend="cpu", lean=flag, **OPTIONS) for flag in (False, True))
    for f, g in zip(full, lean):
        assert set(f) - set(g) == set(FOLDED_KEYS) and set(g) - set(f) == set()
        for key in ("period", "T0", "duration", "depth", "SDE", "snr", "FAP", "odd_even_mismatch",
                    "transit_count", "distinct_transit_count"):
            assert g[key] == f[key], key
        np.testing.assert_array_equal(g.per_transit_count, f.per_transit_count)


def test_curves_tls_prebins_for_an_approximate_backend_are_searched_alone(curves, monkeypatch, capsys):
    """TLS's power() bins dense light curves for approximate backends: such a
    light curve goes through power() (frontend.planned_search), not the batch."""
    from backends.implementations.cpu import CPUBackend
    from backends.statistics import FOLDED_KEYS

    class Rough(CPUBackend):
        name, exact, searched = "rough", False, []

        def search_many(self, jobs, progress=None, found=None):
            self.searched += [plan.lc.size for plan, _ in jobs]
            return super().search_many(jobs, progress, found)

    monkeypatch.setenv("TLS_BIN_FRACTION", "10")  # bins of 2 cadences and more at the longest periods
    out = search_batch(curves[:1], backend=Rough(), **OPTIONS)
    assert Rough.searched == []
    alone = backends.search(*curves[0], backend=Rough(), **OPTIONS)
    np.testing.assert_array_equal(out[0].chi2, alone.chi2)
    assert out[0].meta["id"] == 0 and out[0].meta["backend"] == "rough"
    lean = search_batch(curves[:1], backend=Rough(), lean=True, **OPTIONS)[0]  # TLS's power(), made lean
    assert lean.SDE == alone.SDE and set(alone) - set(lean) == set(FOLDED_KEYS)
    search_batch(curves[:1], backend=Rough(), show_progress_bar=True, **OPTIONS)  # the batch's bar only
    assert "periods" not in capsys.readouterr().err
    monkeypatch.setenv("TLS_BIN_FRACTION", "0.0")  # none binned: the batch searches it
    search_batch(curves[:1], backend=Rough(), **OPTIONS)
    assert Rough.searched == [curves[0][0].size]


def read_noting_pid(curve_id, path):
    """``npz_files.read``, leaving the reading process's pid beside the file."""
    import os

    item = npz_files.read(curve_id, path)
    Path(f"{path}.{curve_id}.read").write_text(str(os.getpid()))
    if Path(path).name == "die.npz":
        os._exit(3)  # the reader process dies in the middle of a task
    return item


@pytest.fixture
def gpu_worker(monkeypatch):
    """A worker whose backend says it runs on a GPU (the cpu backend's search), with
    its own reader of files (``read_noting_pid``), ended afterwards."""
    from backends.implementations.cpu import CPUBackend

    class OnGPU(CPUBackend):
        device = "gpu"

    reader = npz_files.Reader(read_noting_pid)
    monkeypatch.setattr(batch, "READER", reader)
    monkeypatch.setattr(batch, "worker_backend", functools.lru_cache(lambda name: OnGPU()))
    yield OnGPU
    reader.close()


def test_a_gpu_worker_reads_its_files_in_a_process_of_its_own(inputs, gpu_worker):
    """Read by a child process, which ends with the worker's release."""
    import os

    files = {f"lc{k}": str(inputs / f"lc{k % 2}.npz") for k in range(6)}
    rows = batch.search_files({**files, "gone": str(inputs / "gone.npz")}, "cpu", OPTIONS)
    assert sorted(r["id"] for r in rows if r["error"] is None) == sorted(files)
    gone, = (r for r in rows if r["error"] is not None)
    assert gone["id"] == "gone" and "gone.npz is not a readable .npz archive" in gone["error"]
    child, = {int(Path(f"{path}.{i}.read").read_text()) for i, path in files.items()}
    assert child != os.getpid() and child == next(iter(batch.READER._pool._processes))
    batch.release_worker()
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


@pytest.mark.parametrize("backend, gpus, apart", [("cpu", 1, False), ("auto", 0, False), ("auto", 1, True)])
def test_a_cpu_worker_reads_its_own_files(inputs, monkeypatch, backend, gpus, apart):
    """Only a GPU's search is kept waiting by reads (a CPU curve takes ~0.3 s):
    a cpu backend, or ``auto`` where no GPU is, reads in the worker."""
    import backends.gpu

    used = []
    monkeypatch.setattr(backends.gpu, "cuda_device_count", lambda: gpus)
    monkeypatch.setattr(batch.READER, "items", lambda files, here=False: used.append(here) or iter(()))
    monkeypatch.setattr(backends, "search_batch", lambda items, **kw: list(items) and [])  # reads, searches none
    batch.search_files({"a": str(inputs / "lc0.npz")}, backend, OPTIONS)
    assert used == [not apart]


def test_a_reader_process_dies_with_its_parent_killed(inputs):
    """No orphan: the parent killed with SIGKILL, its reader process ends too."""
    import os
    import signal
    import subprocess

    code = ("import os, sys; from validation import npz_files; r = npz_files.Reader(); "
            f"list(r.items({{'a': {str(inputs / 'lc0.npz')!r}}})); "
            "print(next(iter(r._pool._processes)), flush=True); sys.stdin.read()")
    parent = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=Path(batch.__file__).parents[1])
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    status = Path(f"/proc/{child}/status")
    while time.monotonic() < deadline:
        try:
            if "\tZ" in status.read_text().split("State:")[1].splitlines()[0]:
                return  # ended, not yet reaped
        except FileNotFoundError:
            return
        time.sleep(0.05)
    pytest.fail(f"reader process {child} outlived its parent")


def test_a_reader_that_dies_fails_its_task_and_the_next_task_gets_another(inputs, gpu_worker, tmp_path):
    import shutil

    from concurrent.futures.process import BrokenProcessPool

    shutil.copy(inputs / "lc0.npz", tmp_path / "die.npz")
    with pytest.raises(BrokenProcessPool):
        batch.search_files({"a": str(inputs / "lc0.npz"), "b": str(tmp_path / "die.npz")}, "cpu", OPTIONS)
    assert batch.READER._pool is None
    row, = batch.search_files({"c": str(inputs / "lc1.npz")}, "cpu", OPTIONS)
    assert row["id"] == "c" and row["error"] is None


def test_a_daemonic_worker_reads_in_its_own_process_and_says_so_once(inputs, gpu_worker, monkeypatch):
    import multiprocessing
    import os

    monkeypatch.setitem(multiprocessing.current_process()._config, "daemon", True)
    files = {"a": str(inputs / "lc0.npz")}
    with pytest.warns(UserWarning, match="daemonic .* read in the searching process"):
        row, = batch.search_files(files, "cpu", OPTIONS)
    assert row["error"] is None and batch.READER._pool is None
    assert Path(f"{files['a']}.a.read").read_text() == str(os.getpid())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batch.search_files(files, "cpu", OPTIONS)


def test_a_worker_makes_its_backend_once(inputs, monkeypatch):
    from backends.implementations.cpu import CPUBackend

    batch.worker_backend.cache_clear()
    made, init = [], CPUBackend.__init__
    monkeypatch.setattr(CPUBackend, "__init__", lambda self: made.append(self) or init(self))
    for name in ("lc0", "lc1"):
        rows = batch.search_files({name: str(inputs / f"{name}.npz")}, "cpu", OPTIONS)
        assert rows[0]["error"] is None and rows[0]["backend"] == "cpu"
    assert len(made) == 1
    assert batch.worker_backend("auto") == "auto"  # chosen by search_batch, per batch
    batch.release_worker()
    assert batch.worker_backend.cache_info().currsize == 0


def test_show_progress_bar_is_one_bar_over_the_light_curves(curves, capsys):
    search_batch(curves[:2], backend="cpu", chunk_size=1, **OPTIONS)
    assert capsys.readouterr().err == ""
    search_batch(curves[:2], backend="cpu", chunk_size=1, show_progress_bar=True, **OPTIONS)
    err = capsys.readouterr().err
    assert "light curves searched" in err and "2/2" in err and "periods" not in err


def test_bad_backend_or_option_raises_at_once(curves):
    with pytest.raises(ValueError, match="unknown backend"):
        search_batch(curves, backend="nope")
    with pytest.raises(ValueError, match="unknown power.. option 'perod_max': did you mean 'period_max'"):
        search_batch(curves, backend="cpu", perod_max=6.0)
    with pytest.raises(TypeError, match="name or a TLSBackend"):
        search_batch(curves, backend=3)


# ---- the Dask path -------------------------------------------------------------------------------

@pytest.fixture()
def inputs(tmp_path, curves):
    folder = tmp_path / "in"
    folder.mkdir()
    for k, (t, y, dy) in enumerate(curves):
        np.savez(folder / f"lc{k}.npz", time=t, flux=y, flux_err=dy)
    np.savez(folder / "broken.npz", time=curves[0][0])  # no flux
    return folder


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


@requires_distributed
def test_cli_on_two_cpu_workers(inputs, tmp_path, capsys):
    out = tmp_path / "results.parquet"
    argv = ["--workers", "2", "--backend", "cpu", "--batch-size", "2", "--tls", "period_min=3.0",
            "--tls", "period_max=6.0", "--no-progress", "--out", str(out), str(inputs)]
    assert batch.main(argv) == 0
    assert "4 light curves searched (1 errors)" in capsys.readouterr().out
    df = pd.read_parquet(out).set_index("id").sort_index()
    assert list(df.index) == ["broken", "lc0", "lc1", "lc2"]
    assert "has no flux array" in df.loc["broken", "error"] and np.isnan(df.loc["broken", "period"])
    assert df.loc["lc0":, "error"].isna().all() and (df.loc["lc0":, "backend"] == "cpu").all()
    assert np.allclose(df.loc["lc0":, "period"], 4.3, rtol=0.01) and (df.loc["lc0":, "SDE"] > 7).all()
    assert len(list(out.glob("part-*.parquet"))) == 2 and not list(out.glob(".*"))


@requires_distributed
def test_a_monitored_run_has_its_memory_and_cost(inputs, tmp_path, client):
    summary = batch.run([inputs], tmp_path / "out", client, "cpu", options=OPTIONS, progress=False,
                        monitor=0.05)
    resources = summary["resources"]
    assert resources["interval_s"] == 0.05 and resources["host_peak_rss_mib"] > 50
    cost = batch.cost(summary, gpus=2, usd_per_gpu_hour=3.0)
    assert cost["usd_per_million_curves"] == pytest.approx(2 * 3.0 * summary["seconds"] / 3600 / 4 * 1e6)
    line = batch.resources_line({**summary, "cost": cost})
    assert "host peak" in line and f"${cost['usd_per_million_curves']:.2f} per million" in line
    assert batch.cost({"searched": 0, "seconds": 1.0}, 1, 3.0)["usd_per_million_curves"] is None
    assert "resources" not in batch.run([inputs], tmp_path / "out", client, "cpu", options=OPTIONS,
                                        progress=False)  # not asked for


def test_the_resources_line_names_the_sm_clock_where_known():
    gpu = {"samples": 4, "mean_util_pct": 97.0, "busy_samples": 4, "max_used_mib": 2048.0}
    clocked = {"resources": {"gpus": {"0000:19:00.0": {**gpu, "busy_sm_mhz": 1755.0, "max_sm_mhz": 1980.0}}}}
    assert batch.resources_line(clocked) == ("GPU 0000:19:00.0: busy 97 % of 4 samples, peak 2048 MiB, "
                                             "SM clock 1755 of 1980 MHz")
    for unknown in ({}, {"busy_sm_mhz": None, "max_sm_mhz": 1980.0}):  # an older summary; no busy sample
        line = batch.resources_line({"resources": {"gpus": {"0000:19:00.0": {**gpu, **unknown}}}})
        assert line == "GPU 0000:19:00.0: busy 97 % of 4 samples, peak 2048 MiB"


@requires_distributed
def test_rerun_skips_done_ids(inputs, tmp_path, client):
    out = tmp_path / "out"
    first = batch.run([inputs / "lc0.npz"], out, client, "cpu", options=OPTIONS, progress=False)
    assert first["searched"] == 1
    part = next(out.glob("part-*.parquet"))
    again = batch.run([inputs], out, client, "cpu", batch_size=2, options=OPTIONS, progress=False)
    assert again["skipped"] == 1 and again["searched"] == 3
    assert sorted(batch.ResultDataset(out).read()["id"]) == ["broken", "lc0", "lc1", "lc2"]
    assert part.exists()
    with pytest.raises(ValueError, match="holds results of"):
        batch.run([inputs], out, client, "cpu", options={"period_max": 5.0}, progress=False)


@requires_distributed
def test_crash_keeps_finished_batches(inputs, tmp_path, client, monkeypatch):
    out = tmp_path / "out"
    write = batch.ResultDataset.write
    calls = []

    def crash_after_one(self, rows):
        if calls:
            raise KeyboardInterrupt
        calls.append(rows)
        write(self, rows)

    monkeypatch.setattr(batch.ResultDataset, "write", crash_after_one)
    with pytest.raises(KeyboardInterrupt):
        batch.run([inputs], out, client, "cpu", batch_size=1, options=OPTIONS, progress=False)
    kept = batch.ResultDataset(out).done_ids()
    assert kept == {calls[0][0]["id"]} and not list(out.glob(".*"))
    monkeypatch.setattr(batch.ResultDataset, "write", write)
    rest = batch.run([inputs], out, client, "cpu", batch_size=1, options=OPTIONS, progress=False)
    assert rest["skipped"] == 1 and rest["searched"] == 3


def test_failed_write_leaves_no_file(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    dataset = batch.ResultDataset(tmp_path)
    monkeypatch.setattr(pq, "write_table", lambda table, where: open(where, "w").write("half") and 1 / 0)
    with pytest.raises(ZeroDivisionError):
        dataset.write([batch.summary_row(BatchError("a", "E", "m"), "cpu")])
    assert list(tmp_path.iterdir()) == [] and dataset.done_ids() == set()


def test_result_files_get_the_permissions_of_any_new_file(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        batch.ResultDataset(tmp_path).write([batch.summary_row(BatchError("a", "E", "m"), "cpu")])
        batch.ResultDataset(tmp_path).check_run("cpu", {})
    finally:
        os.umask(old)
    for path in tmp_path.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path


@pytest.mark.parametrize("content, why", [
    (b"garbage", "not a readable .npz archive"),
    (b"", "not a readable .npz archive"),
    (b"PK\x03\x04 half a zip", "not a readable .npz archive"),
    ("npy", "holds one array"),
    ("bad crc", "a corrupt array"),
])
def test_an_unreadable_npz_is_named(tmp_path, curves, content, why):
    import io

    path = tmp_path / "lc.npz"
    if content == "npy":
        np.save(tmp_path / "lc.npy", curves[0][0])
        (tmp_path / "lc.npy").rename(path)
    elif content == "bad crc":
        buffer = io.BytesIO()
        np.savez(buffer, time=curves[0][0], flux=curves[0][1])
        data = bytearray(buffer.getvalue())
        data[200:260] = b"x" * 60  # inside the first member's data
        path.write_bytes(bytes(data))
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=why) as error:
        batch.load_npz("lc", path)
    assert str(path) in str(error.value) and "pickled" not in str(error.value)
    row, = batch.search_files({"lc": path}, "cpu", OPTIONS)
    assert row["id"] == "lc" and str(path) in row["error"] and why in row["error"]


@requires_distributed
def test_a_failed_batch_is_reported_not_recorded(inputs, tmp_path, client, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setattr(batch, "search_files", divmod)  # a task that raises on the worker (TypeError)
    summary = batch.run([inputs], out, client, "cpu", batch_size=2, options=OPTIONS, progress=False)
    assert summary["failed_batches"] == 2 and summary["searched"] == 0
    assert batch.ResultDataset(out).done_ids() == set()


@pytest.mark.parametrize("argv, message", [
    (["--backend", "nope"], "unknown backend 'nope'"),
    pytest.param(["--gpus", "1", "--gpu-cluster", "dask-cuda", "--backend", "cpu"], "needs dask-cuda",
                 marks=requires_distributed),
    pytest.param(["--gpus", "2", "--backend", "cpu"], "only 1 CUDA device(s) visible", marks=requires_distributed),
    (["--workers", "1", "--backend", "cpu", "--tls", "period_max=6"], "holds results of"),
    (["--workers", "1", "--backend", "cpu", "--tls", "perod_max=6"], "did you mean 'period_max'"),
])
def test_cli_errors(inputs, tmp_path, capsys, monkeypatch, argv, message):
    import builtins

    real_import = builtins.__import__

    def no_dask_cuda(name, *a, **k):
        if name == "dask_cuda":
            raise ImportError("No module named 'dask_cuda'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_dask_cuda)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    batch.ResultDataset(tmp_path / "o").check_run("cpu", {})
    assert batch.main([*argv, "--out", str(tmp_path / "o"), str(inputs)]) == 2
    assert message in capsys.readouterr().err


def test_without_distributed_the_cli_says_what_to_install(inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert batch.main(["--workers", "1", "--backend", "cpu", "--out", str(tmp_path / "o"), str(inputs)]) == 2
    assert "pip install distributed" in capsys.readouterr().err


def test_inputs_and_options(tmp_path, inputs):
    assert list(batch.find_inputs([inputs])) == ["broken", "lc0", "lc1", "lc2"]
    (tmp_path / "again").mkdir()
    (tmp_path / "again" / "lc0.npz").write_bytes((inputs / "lc0.npz").read_bytes())
    with pytest.raises(ValueError, match="two light curves with id 'lc0'"):
        batch.find_inputs([inputs, tmp_path / "again"])
    with pytest.raises(ValueError, match="not an .npz file"):
        batch.find_inputs([tmp_path / "missing.npz"])
    with pytest.raises(ValueError, match="no .npz light curves"):
        batch.find_inputs([tmp_path / "again" / "..", ])
    assert batch.tls_option("period_max=5") == ("period_max", 5)
    assert batch.tls_option("transit_template=box") == ("transit_template", "box")
    with pytest.raises(SystemExit):
        batch.parse_args(["--workers", "0", "--out", "o", "x"])
    for wrong in (["--usd-per-gpu-hour", "3"], ["--gpus", "1", "--usd-per-gpu-hour", "0"], ["--monitor", "-1"]):
        with pytest.raises(SystemExit):
            batch.parse_args([*wrong, "--out", "o", "x"])
    assert batch.parse_args(["--gpus", "1", "--usd-per-gpu-hour", "2.5", "--monitor", "1", "--out", "o",
                             "x"]).usd_per_gpu_hour == 2.5


def test_a_stalled_batch_dumps_every_threads_stack_once_and_goes_on(monkeypatch, capfd, tmp_path):
    """--stall-dump: a batch still running after the given seconds writes each
    thread's Python stack to standard error; a quick one writes nothing, and
    no dump is left armed after the task."""
    def slow_load(curve_id, path):
        time.sleep(0.6)
        raise ValueError("unreadable")

    monkeypatch.setattr(npz_files, "load_npz", slow_load)
    row, = batch.search_files({"lc": str(tmp_path / "lc.npz")}, "cpu", OPTIONS, stall_dump=0.2)
    err = capfd.readouterr().err
    assert row["error"] == "ValueError: unreadable"
    assert "most recent call first" in err and "slow_load" in err and err.count("slow_load") == 1
    monkeypatch.setattr(npz_files, "load_npz", lambda curve_id, path: (_ for _ in ()).throw(ValueError("x")))
    batch.search_files({"lc": str(tmp_path / "lc.npz")}, "cpu", OPTIONS, stall_dump=0.2)
    time.sleep(0.4)  # past the quick task's deadline: its dump was cancelled
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("value", ["0", "-1"])
def test_stall_dump_must_be_positive(value, capsys):
    with pytest.raises(SystemExit):
        batch.parse_args(["--backend", "cpu", "--out", "o", "--stall-dump", value, "x.npz"])
    assert "--stall-dump must be positive" in capsys.readouterr().err
