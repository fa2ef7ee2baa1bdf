"""The asv suite (run in-process on the cpu backend at the smallest case), its
skips, the peers, the scaling figure and the CI regression check."""

import json
import os
import subprocess
import sys

import pytest

import backends
from backends.implementations.cpu import CPUBackend
from benchmarks import REPO, bench_peers, bench_search, bench_stages, cases, figure, peers

sys.path.insert(0, os.path.join(REPO, "scripts"))
import bench_regress  # noqa: E402

N, P = 500, 1000


class Unavailable(CPUBackend):
    name = "bench-test-unavailable"

    @classmethod
    def missing(cls):
        return "not on this machine"


class CPUCopy(CPUBackend):
    name = "bench-test-copy"


@pytest.fixture
def extra_backends():
    for cls in (Unavailable, CPUCopy):
        backends.register_backend(cls.name, cls)
    yield
    for cls in (Unavailable, CPUCopy):
        backends.unregister_backend(cls.name)


def run(bench, *params):
    """setup + every benchmark method of an asv class, as asv calls them."""
    bench.setup(*params)
    return {name: getattr(bench, name)(*params) for name in dir(bench)
            if name.startswith(("time_", "track_"))}


def test_case_has_the_requested_periods_and_the_injected_transit():
    c = cases.case(N, P)
    assert c.t.size == N and c.periods.size == P
    assert c.plan.lc.size == N
    assert c.truth["period"] == cases.INJECTED["period"]


def test_host_and_device_stages_run_on_cpu():
    run(bench_stages.HostStages(), N, P)
    for cls in (bench_stages.Upload, bench_stages.FoldSort, bench_stages.Chi2Scan,
                bench_stages.Search):
        run(cls(), "cpu", N, P)


def test_end_to_end_warm_runs_and_cold_code_runs_in_a_fresh_interpreter():
    run(bench_search.EndToEnd(), "cpu", N, P)
    bench = bench_search.ColdStart()
    bench.setup("cpu", N, P)
    code, setup = bench.timeraw_search_cold("cpu", N, P)
    subprocess.run([sys.executable, "-c", f"{setup}\n{code}"], check=True, cwd="/")


def test_unavailable_backend_and_over_budget_cases_are_skipped(extra_backends, monkeypatch):
    with pytest.raises(NotImplementedError, match="not on this machine"):
        bench_stages.Search().setup(Unavailable.name, N, P)
    with pytest.raises(NotImplementedError, match="over the cpu work budget"):
        bench_stages.Search().setup("cpu", 100000, 100000)
    monkeypatch.setenv("TLS_BENCH_WORK_CPU", "1000")
    with pytest.raises(NotImplementedError, match="over the cpu work budget"):
        cases.require_budget("cpu", N, P)


def test_chi2_scan_skips_folds_that_would_not_fit(monkeypatch):
    class Unfused(CPUBackend):
        fuses_fold_sort = False

    monkeypatch.setattr(cases, "runnable_backend", lambda *a: Unfused())
    monkeypatch.setattr(bench_stages, "runnable_backend", lambda *a: Unfused())
    monkeypatch.setattr(bench_stages, "FOLD_MEMORY", 1.0)
    with pytest.raises(NotImplementedError, match="would not fit"):
        bench_stages.Chi2Scan().setup("cpu", N, P)


def test_accuracy_of_an_identical_backend_is_zero(extra_backends):
    result = run(bench_search.Accuracy(), CPUCopy.name, N, P)
    assert result == {"track_max_abs_delta_sr": 0.0, "track_sde_relative_error": 0.0}


def test_accuracy_sees_a_wrong_backend(extra_backends, monkeypatch):
    bench = bench_search.Accuracy()
    bench.setup(CPUCopy.name, N, P)
    bench.result.SR = bench.result.SR * 0.5
    bench.result.SDE = bench.reference.SDE * 1.2
    assert bench.track_max_abs_delta_sr(CPUCopy.name, N, P) == pytest.approx(0.5, rel=1e-9)
    assert bench.track_sde_relative_error(CPUCopy.name, N, P) == pytest.approx(0.2)


def test_gpu_memory_is_only_measured_for_gpu_backends():
    with pytest.raises(NotImplementedError, match="does not run on a GPU"):
        bench_search.GPUMemory().setup("cpu", N, P)


@pytest.mark.parametrize("peer", ["tls-fused", "bls"])
def test_cpu_peers_run_and_find_the_injected_period(peer):
    result = run(bench_peers.Peers(), peer, N, P)
    assert result["track_peer_period_error"] < 0.01


def test_missing_peer_is_skipped(monkeypatch):
    monkeypatch.setitem(peers.PEERS, "gtls", ("gpu", "no_such_package_xyz"))
    with pytest.raises(NotImplementedError, match="no_such_package_xyz"):
        bench_peers.Peers().setup("gtls", N, P)


# ---- asv result files: the scaling figure and the regression check ----------------

def result_set(commit, date, seconds, spread=0.01, name="bench_stages.Search.time_search"):
    """An asv result file (format 2) of one benchmark with params ('cpu', 500, 1000)."""
    samples = [seconds * (1 + spread * k) for k in (-1, 0, 1, 0, 1)]
    ci = (min(samples), max(samples))
    columns = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a",
               "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat",
               "samples"]
    row = [[seconds], [["'cpu'"], ["500"], ["1000"]], "v1", date, 1.0, [ci[0]], [ci[1]],
           [ci[0]], [ci[1]], [1], [len(samples)], [samples]]
    return {"commit_hash": commit, "env_name": "existing-py", "date": date,
            "params": {"machine": "gpu-test"}, "python": "3.12", "requirements": {},
            "env_vars": {}, "result_columns": columns, "results": {name: row},
            "durations": {}, "version": 2}


def write_results(root, sets, name="bench_stages.Search.time_search"):
    machine = root / "gpu-test"
    machine.mkdir(parents=True, exist_ok=True)
    (machine / "machine.json").write_text(json.dumps({"machine": "gpu-test", "version": 1}))
    for data in sets:
        (machine / f"{data['commit_hash'][:8]}-existing-py.json").write_text(json.dumps(data))
    (root / "benchmarks.json").write_text(json.dumps({"version": 2, name: {
        "name": name, "type": "time", "unit": "seconds", "version": "v1",
        "param_names": ["backend", "ndata", "nperiods"],
        "params": [["'cpu'"], ["500"], ["1000"]]}}))
    return root


def test_regression_check_names_a_slower_gpu_result(tmp_path, capsys):
    write_results(tmp_path, [result_set("a" * 40, 1, 1.0), result_set("b" * 40, 2, 1.3)])
    assert bench_regress.main(["--results", str(tmp_path)]) == 1
    assert "bench_stages.Search.time_search('cpu', 500, 1000)" in capsys.readouterr().err


def test_regression_check_passes_within_factor_or_spread(tmp_path):
    write_results(tmp_path / "small", [result_set("a" * 40, 1, 1.0), result_set("b" * 40, 2, 1.05)])
    assert bench_regress.main(["--results", str(tmp_path / "small")]) == 0
    noisy = [result_set("a" * 40, 1, 1.0, spread=0.5), result_set("b" * 40, 2, 1.3, spread=0.5)]
    write_results(tmp_path / "noisy", noisy)
    assert bench_regress.main(["--results", str(tmp_path / "noisy")]) == 0
    assert bench_regress.main(["--results", str(tmp_path / "noisy"), "--factor", "1.01"]) == 0


def test_regression_check_compares_the_newest_two_and_passes_with_one(tmp_path):
    write_results(tmp_path, [result_set("a" * 40, 3, 1.0)])
    assert bench_regress.main(["--results", str(tmp_path)]) == 0
    write_results(tmp_path, [result_set("b" * 40, 1, 9.0), result_set("c" * 40, 2, 1.0)])
    assert bench_regress.main(["--results", str(tmp_path)]) == 0  # c -> a: faster


def test_committed_results_have_no_regression():
    assert bench_regress.main([]) == 0


def test_scaling_figure_from_results(tmp_path):
    data = result_set("a" * 40, 1, 2.0, name="bench_search.EndToEnd.time_search_warm")
    write_results(tmp_path, [data], name="bench_search.EndToEnd.time_search_warm")
    out = tmp_path / "scaling.png"
    assert figure.main(["gpu-test", "--results", str(tmp_path), "--out", str(out),
                        "--ndata", "500", "--nperiods", "1000"]) == 0
    assert out.stat().st_size > 0
    assert figure.timings(data) == {("cpu", 500, 1000): 2.0}
    with pytest.raises(SystemExit):
        figure.main(["gpu-test", "--results", str(tmp_path / "none"), "--out", str(out)])


def test_a_backend_that_refuses_the_light_curve_is_skipped_not_failed():
    """asv skips (NotImplementedError in setup) a case the backend refuses by
    design, e.g. ``simple`` beyond shared memory; ``select`` leaves it out."""
    import backends
    from backends.implementations.cpu import CPUBackend
    from benchmarks.cases import runnable_backend

    class Small(CPUBackend):
        name = "small"

        def refuses(self, plan):
            return "too many points for this test backend" if plan.lc.size > 100 else None

    backends.register_backend("small", Small)
    try:
        with pytest.raises(NotImplementedError, match="too many points"):
            runnable_backend("small", 500, 1000)
    finally:
        backends.unregister_backend("small")
