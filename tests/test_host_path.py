"""The host path's measurement: ``benchmarks.host_path`` (replayed statistics,
host seconds per light curve), ``scripts/throughput.py``'s targets and
``scripts/host_path_report.py``'s summary."""

import json
import time

try:
    import resource
except ImportError:  # Windows
    resource = None

import numpy as np
import pytest
from conftest import box_light_curve

import backends
import benchmarks.host_path
from benchmarks.host_path import HOST_TARGET_S, Replay, cpu_probe_us, host_seconds, k2_like, python_probe_us

import host_path_report
import throughput

OPTIONS = {"period_min": 3.0, "period_max": 5.0}


@pytest.fixture(scope="module")
def curves():
    return [box_light_curve(days=16.0, seed=k) for k in range(3)]


def test_replay_hands_search_batch_what_its_source_found(curves):
    cpu = backends.get_backend("cpu")
    replay = Replay(curves, cpu, **OPTIONS)
    assert (replay.name, replay.exact, replay.device) == ("cpu", True, "cpu")
    for got, want in zip(backends.search_batch(curves, backend=replay, **OPTIONS),
                         backends.search_batch(curves, backend=cpu, **OPTIONS)):
        assert got.period == want.period and got.SDE == want.SDE and got.T0 == want.T0
        np.testing.assert_array_equal(got.power, want.power)
    other = box_light_curve(days=16.0, seed=9)
    with pytest.raises(KeyError):  # a light curve it has not seen
        replay.search(*backends.make_plan(*other, **OPTIONS))


def test_host_seconds_per_curve(curves):
    replay = Replay(curves, backends.get_backend("cpu"), **OPTIONS)
    seconds = host_seconds(curves, replay, lean=True, repeats=2, **OPTIONS)
    assert 0 < seconds["cpu_s_per_curve"] < 1 and 0 < seconds["wall_s_per_curve"] < 1
    assert 0 < seconds["probe_us"] < 1e6 and 0 < seconds["python_probe_us"] < 1e6


def test_the_cpu_probe_times_the_running_median_in_microseconds(monkeypatch):
    def busy_running_median(data, kernel):  # 2 ms of CPU time, whatever the core's speed
        assert data is benchmarks.host_path.PROBE_SPECTRUM and kernel == benchmarks.host_path.PROBE_KERNEL
        end = time.process_time() + 2e-3
        while time.process_time() < end:
            pass

    monkeypatch.setattr(benchmarks.host_path, "running_median", busy_running_median)
    assert 2000 <= cpu_probe_us(calls=3) < 4000


def test_the_python_probe_times_its_interpreted_work_in_microseconds(monkeypatch):
    calls = []

    def busy_work():  # 3 ms of CPU time, whatever the core's speed
        calls.append(1)
        end = time.process_time() + 3e-3
        while time.process_time() < end:
            pass

    monkeypatch.setattr(benchmarks.host_path, "_interpreted_work", busy_work)
    assert 3000 <= python_probe_us(calls=3) < 6000 and len(calls) == 4  # one untimed, three timed


def test_k2_like_curves_differ_a_little():
    curves = k2_like(6)
    assert len({t.size for t, _, _ in curves}) == 5 and curves[5][0].size == curves[0][0].size
    assert all(np.ptp(t) > 85 and t.min() >= 3000.0 for t, _, _ in curves)


def report(host_ms=1.5, end_to_end=55.0, packed=57.0, backend="simple"):
    host = {"cpu_s_per_curve": host_ms / 1e3, "wall_s_per_curve": host_ms / 1e3,
            "statistics_cpu_s_per_curve": 0.8e-3, "probe_us": 250.0, "python_probe_us": 400.0}
    out = {"backend": backend, "workers": [1, 4], "search_many": {"curves_per_s_warm": packed},
           "batch_w1": {"curves_per_s_warm": end_to_end}, "lean_w1": {"curves_per_s_warm": end_to_end + 1},
           "host": {"plan_cpu_s_per_curve": 0.3e-3, "full": host, "lean": host},
           "tls_default_curves_per_s_warm": 3.8}
    return {**out, "targets": throughput.targets(out)}


def test_targets_judge_host_time_and_end_to_end_rate():
    met = report()["targets"]
    assert met["host_met"] and met["end_to_end_met"] and met["host_target_s"] == HOST_TARGET_S
    assert met["host_probe_us"] == 250.0 and met["host_python_probe_us"] == 400.0
    assert met["end_to_end_over_packed"] == pytest.approx(55 / 57)
    missed = report(host_ms=2.5, end_to_end=30.0)["targets"]
    assert not missed["host_met"] and not missed["end_to_end_met"]


def test_summary_of_a_device_run(tmp_path):
    (tmp_path / "header.txt").write_text("date: today\nNVIDIA H100 80GB HBM3, 570, 81559 MiB\n")
    (tmp_path / "throughput_simple.json").write_text(json.dumps(report()))
    (tmp_path / "throughput_pruned.json").write_text(json.dumps(report(host_ms=2.5, end_to_end=20.0,
                                                                       packed=33.0, backend="pruned")))
    (tmp_path / "survey").mkdir()
    (tmp_path / "survey" / "scaling.md").write_text("10000 K2-like light curves\n\n| backend | GPUs |\n")
    text = host_path_report.summary(tmp_path)
    assert "NVIDIA H100 80GB HBM3" in text and "Scaling" not in text
    assert "## Survey: python -m validation.batch on one GPU\n\n10000 K2-like light curves" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows[0].startswith("| `pruned` | 33.0 | 20.0 | 21.0 | 0.61 (**not met**) | 2.50 | 2.50 (**not met**) "
                              "| 250, 400 |")
    assert rows[1].startswith("| `simple` | 57.0 | 55.0 | 56.0 | 0.96 (met) | 1.50 | 1.50 (met) | 250, 400 | 0.30, 0.80")


@pytest.mark.skipif(not hasattr(resource, "RUSAGE_THREAD"), reason="per-thread usage is Linux's")
def test_search_batch_wakes_once_per_chunk_not_per_light_curve():
    """The thread that runs a batch waits for a chunk's plans, and later its
    results, all at once: waking for each light curve's future took the GIL
    back and forth (16 light curves: ~98 voluntary context switches of that
    thread, against 8, on the 2-core development machine). 96 light curves in
    chunks of 1, 2, 4, 8, 16, 32 and 33 (``_ramp``): 39-72, under two per light curve."""
    distinct = [box_light_curve(days=16.0, seed=k) for k in range(16)]
    replay = Replay(distinct, backends.get_backend("cpu"), **OPTIONS)
    many = distinct * 6
    backends.search_batch(many, backend=replay, chunk_size=96, **OPTIONS)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    backends.search_batch(many, backend=replay, chunk_size=96, **OPTIONS)
    assert resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before < 2 * len(many)


def test_a_cold_start_gets_a_new_instance_not_the_kept_one(monkeypatch, tmp_path):
    monkeypatch.setenv("TLS_KERNEL_CACHE_DIR", str(tmp_path))
    kept = backends.get_backend("cpu")
    first, second = throughput.fresh("cpu"), throughput.fresh("cpu")
    assert first is not kept and second is not first
