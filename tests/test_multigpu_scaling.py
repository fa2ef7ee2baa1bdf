"""scripts/multigpu_scaling.py on CPU: one validation.batch run on a "GPU"
worker with the cpu backend (nvidia-smi a stub on PATH), a run past its time
limit, and the table."""

import json
import sys

import pytest
from conftest import requires_distributed

import multigpu_scaling as scaling


@requires_distributed
def test_a_run_and_its_table(npz_inputs, tmp_path, smi, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the cpu backend searches; the worker is handed GPU 1
    monkeypatch.setenv("DASK_DISTRIBUTED__DIAGNOSTICS__NVML", "False")  # GPU 1 may not exist here
    run = scaling.run_batch(npz_inputs, tmp_path / "w", "cpu", 1, "distributed",
                            ["period_min=4.0", "period_max=4.6"], timeout=120)
    assert run["rc"] == 0 and run["cluster"] == "distributed.SpecCluster", run["log_tail"]
    assert run["parquet"] == {"rows": 3, "ids": 3, "errors": 0, "files": 1} and run["searched"] == 3
    (worker,) = run["workers"].values()
    assert worker["CUDA_VISIBLE_DEVICES"] == "1" and worker["warmup_seconds"] > 0
    assert worker["nvidia_smi"] is None  # the stub's process is 4242
    assert run["distinct_gpus"] == (worker["pci_bus_id"] is not None)  # a GPU 1 exists (2-GPU machine)
    assert set(run["gpu_use"]) == {"0000:19:00.0", "0000:3b:00.0"}
    assert run["resources"]["host_peak_rss_mib"] > 50  # the CLI and its worker
    assert run["cost"]["usd_per_million_curves"] == pytest.approx(
        scaling.USD_PER_GPU_HOUR * run["seconds"] / 3600 / 3 * 1e6)
    assert run["mps"] is None  # no MPS daemon here
    two = {**run, "gpus": 2, "per_second": run["per_second"] * 2, "mps": "/tmp/mps-x/pipe"}
    lines = scaling.table({"n": 3, "gpu": "test", "runs": [run, two]}).splitlines()
    assert lines[-2].startswith("| cpu | 1 | 1 | no | distributed.SpecCluster |")
    assert lines[-1].startswith("| cpu | 2 | 1 | yes | distributed.SpecCluster |") and "| 2.00x |" in lines[-1]
    assert f"| {run['cost']['usd_per_million_curves']:.2f} |" in lines[-1]
    assert "3 light curves searched" in (tmp_path / "w" / "run.log").read_text()  # the whole log is kept


@requires_distributed
def test_a_run_past_its_limit(npz_inputs, tmp_path):
    run = scaling.run_batch(npz_inputs, tmp_path / "w", "cpu", 1, "distributed", [], timeout=0.5)
    assert run["rc"] == "timeout" and run["parquet"]["rows"] == 0 and "workers" not in run
    assert (tmp_path / "w" / "run.log").exists()
    assert "| timeout |" in scaling.table({"n": 3, "gpu": "test", "runs": [run]})


def test_dask_cuda_version_says_why_not(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    assert scaling.dask_cuda_version().startswith("not importable: ModuleNotFoundError")


@pytest.mark.parametrize("distinct, rc, size", [(True, 0, []), (False, 1, ["--batch-size", "48"])])
def test_main_runs_each_backend_and_cluster(tmp_path, monkeypatch, distinct, rc, size):
    calls = []

    def fake_run(inputs, work, backend, gpus, cluster, tls, timeout, batch_size, per_gpu, usd_per_gpu_hour,
                 stall_dump):
        calls.append((backend, gpus, cluster, per_gpu, tls, batch_size, stall_dump,
                      len(list(inputs.glob("*.npz")))))
        work.mkdir(parents=True)
        (work / "run.log").write_text(f"the log of {work.name}")
        return {"gpus": gpus, "gpu_cluster": cluster, "backend": backend, "rc": 0, "per_second": 10.0 * gpus,
                "parquet": {"rows": 2, "ids": 2, "errors": 0, "files": 1}, "distinct_gpus": distinct}

    monkeypatch.setattr(scaling, "run_batch", fake_run)
    out = tmp_path / "out"
    argv = ["--n", "2", "--backends", "simple", "thrust", "--runs", "1:auto", "2:distributed:3", "--tls", "period_max=9",
            "--stall-dump", "30", "--work", str(tmp_path / "w"), "--out", str(out), *size]
    assert scaling.main(argv) == rc
    batch_size = int(size[1]) if size else None  # None: validation.batch's default
    assert calls == [(b, g, c, k, ["period_max=9"], batch_size, 30.0, 2) for b in ("simple", "thrust")
                     for g, c, k in ((1, "auto", 1), (2, "distributed", 3))]
    report = json.loads((out / "scaling.json").read_text())
    assert report["n"] == 2 and len(report["runs"]) == 4
    assert (out / "scaling.md").read_text().count("| 2.00x |") == 2
    assert (out / "thrust_2_distributed_3.log").read_text() == "the log of thrust_2_distributed_3"
    assert len(list(out.glob("*.log"))) == 4


def test_table_shows_the_gpus_the_workers_held():
    """CUDA spells a PCI bus id in capitals, nvidia-smi (as the sampler keeps it) not."""
    run = {"backend": "pruned", "gpus": 1, "per_gpu": 2, "gpu_cluster": "distributed", "per_second": 90.0,
           "searched": 10, "rc": 0, "distinct_gpus": True, "parquet": {"rows": 10, "errors": 0},
           "workers": {w: {"pci_bus_id": "0000:3B:00.0", "warmup_seconds": 2.0} for w in ("a", "b")},
           "gpu_use": {"0000:19:00.0": {"mean_util_pct": 0.0, "max_used_mib": 500.0},
                       "0000:3b:00.0": {"mean_util_pct": 91.0, "max_used_mib": 4100.0}},
           "resources": {"host_peak_rss_mib": 1800.0}, "cost": {"usd_per_million_curves": 9.26}}
    line = scaling.table({"n": 10, "gpu": "2 x test", "usd_per_gpu_hour": 3.0, "runs": [run]}).splitlines()[-1]
    assert "| True | 91 | 4100 | 1800 | 9.26 | 0 |" in line
    assert "$3.00 per GPU-hour" in scaling.table({"n": 10, "gpu": "x", "usd_per_gpu_hour": 3.0, "runs": []})


def test_speed_up_is_over_one_gpu_with_as_many_workers_per_gpu():
    def run(gpus, per_gpu, rate):
        return {"backend": "pruned", "gpus": gpus, "per_gpu": per_gpu, "gpu_cluster": "distributed",
                "per_second": rate, "rc": 0, "distinct_gpus": True, "parquet": {"rows": 1, "errors": 0}}

    lines = scaling.table({"n": 1, "gpu": "2 x test", "runs": [run(1, 4, 40.0), run(2, 4, 76.0),
                                                              run(2, 2, 50.0)]}).splitlines()
    assert [line.split(" | ")[6] for line in lines[-3:]] == ["1.00x", "1.90x", "-"]


def test_mps_runs_every_run_under_one_daemon_of_the_scripts_own(tmp_path, monkeypatch):
    import contextlib

    from validation import mps

    events = []

    @contextlib.contextmanager
    def daemon():
        events.append("start")
        yield "/tmp/mps-test/pipe"
        events.append("quit")

    def fake_run(inputs, work, backend, *args):
        events.append(backend)
        work.mkdir(parents=True)
        (work / "run.log").write_text("")
        return {"gpus": 1, "gpu_cluster": "distributed", "backend": backend, "rc": 0, "per_second": 1.0,
                "parquet": {"rows": 2, "ids": 2, "errors": 0, "files": 1}, "distinct_gpus": True}

    monkeypatch.setattr(mps, "daemon", daemon)
    monkeypatch.setattr(scaling, "run_batch", fake_run)
    argv = ["--n", "2", "--backends", "simple", "thrust", "--runs", "1:distributed", "--mps",
            "--work", str(tmp_path / "w"), "--out", str(tmp_path / "out")]
    assert scaling.main(argv) == 0
    assert events == ["start", "simple", "thrust", "quit"]
