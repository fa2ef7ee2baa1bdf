"""The asv suite (run in-process on the cpu backend at the smallest case), its
skips, the peers, the scaling figure and the CI regression check."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import UnavailableBackend as Unavailable
from conftest import box_light_curve, registered

from backends.implementations.cpu import CPUBackend
import backends
from benchmarks import REPO, bench_host, bench_peers, bench_search, bench_stages, cases, figure, peers
from conftest import result_set, write_results

import bench_regress

N, P = 500, 1000
# the GPU machine runs the tests with or without the benchmark wheels (.whl-bench)
needs_asv = pytest.mark.skipif(importlib.util.find_spec("asv") is None, reason="asv is not installed")
needs_astropy = pytest.mark.skipif(importlib.util.find_spec("astropy") is None, reason="astropy is not installed")


class CPUCopy(CPUBackend):
    name = "bench-test-copy"


@pytest.fixture
def extra_backends():
    with registered(Unavailable, CPUCopy):
        yield


def run(bench, *params):
    """setup_cache + setup + every benchmark method of an asv class, as asv calls them."""
    if hasattr(bench, "setup_cache"):
        params = (bench.setup_cache(), *params)
    bench.setup(*params)
    return {name: getattr(bench, name)(*params) for name in dir(bench)
            if name.startswith(("time_", "track_"))}


def only(monkeypatch, cls, name):
    """Limit an asv class's parameters to ``name`` at the smallest case."""
    monkeypatch.setattr(cls, "params", ([name], [N], [P]))


def test_case_has_the_requested_periods_and_the_injected_transit():
    c = cases.case(N, P)
    assert c.t.size == N and c.periods.size == P
    assert c.plan.lc.size == N
    assert c.truth["period"] == cases.INJECTED["period"]


def test_host_and_device_stages_run_on_cpu():
    assert set(run(bench_stages.HostStages(), N, P)) == {"time_grids", "time_template_cache", "time_plan"}
    ran = {}
    for cls in (bench_stages.Upload, bench_stages.FoldSort, bench_stages.Chi2Scan,
                bench_stages.Search):
        bench = cls()
        assert len(run(bench, "cpu", N, P)) == 1  # the stage's one timing
        ran[cls] = bench.backend.work
    # the scan stage's batches cover every period, as the whole search does (after the same warm-up)
    assert ran[bench_stages.Chi2Scan]["shifts"] == ran[bench_stages.Search]["shifts"] > 0


def test_fold_sort_stage_is_skipped_where_it_runs_only_inside_the_scan(monkeypatch):
    def inside_the_scan(self, state, periods):
        raise NotImplementedError("folds, sorts and scans in one kernel")

    monkeypatch.setattr(CPUBackend, "fold_sort", inside_the_scan)  # as simple's does
    with pytest.raises(NotImplementedError, match="one kernel"):
        bench_stages.FoldSort().setup("cpu", N, P)


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


def test_accuracy_of_an_identical_backend_is_zero(extra_backends, monkeypatch):
    only(monkeypatch, bench_search.Accuracy, CPUCopy.name)
    result = run(bench_search.Accuracy(), CPUCopy.name, N, P)
    assert result == {"track_max_abs_delta_sr": 0.0, "track_sde_relative_error": 0.0}


def fake_results(monkeypatch, wrong):
    """bench_search.search returning fixed statistics: ``cpu``'s, and ``wrong``'s."""
    from types import SimpleNamespace

    stats = {"cpu": SimpleNamespace(SR=[1.0, 0.5], SDE=10.0), wrong: SimpleNamespace(SR=[1.0, 0.25], SDE=12.0)}
    monkeypatch.setattr(bench_search, "search", lambda name, n, p: stats[name])


def test_accuracy_sees_a_wrong_backend(extra_backends, monkeypatch):
    only(monkeypatch, bench_search.Accuracy, CPUCopy.name)
    fake_results(monkeypatch, CPUCopy.name)
    result = run(bench_search.Accuracy(), CPUCopy.name, N, P)
    assert result["track_max_abs_delta_sr"] == pytest.approx(0.25)
    assert result["track_sde_relative_error"] == pytest.approx(0.2)


def test_accuracy_reports_a_failing_backend_and_skips_what_cpu_cannot_run(extra_backends,
                                                                            monkeypatch):
    only(monkeypatch, bench_search.Accuracy, Unavailable.name)
    with pytest.raises(NotImplementedError, match="not on this machine"):
        run(bench_search.Accuracy(), Unavailable.name, N, P)
    only(monkeypatch, bench_search.Accuracy, CPUCopy.name)
    monkeypatch.setattr(bench_search, "search", lambda name, n, p: 1 / 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        run(bench_search.Accuracy(), CPUCopy.name, N, P)
    monkeypatch.setenv("TLS_BENCH_WORK_CPU", "1000")
    with pytest.raises(NotImplementedError, match="over the cpu work budget"):
        run(bench_search.Accuracy(), CPUCopy.name, N, P)


def test_timing_prepares_once_per_process_though_asv_sets_up_every_sample(monkeypatch):
    calls = []
    monkeypatch.setattr(bench_search, "search", lambda *params: calls.append(params))
    bench = bench_search.EndToEnd()
    for _ in range(3):
        bench.setup("cpu", N, P)
    assert calls == [("cpu", N, P)]
    bench.time_search_warm("cpu", N, P)
    assert len(calls) == 2


def test_gpu_memory_is_only_measured_for_gpu_backends():
    with pytest.raises(NotImplementedError, match="does not run on a GPU"):
        bench_search.GPUMemory().setup("cpu", N, P)


@pytest.mark.parametrize("peer", ["tls-fused", pytest.param("bls", marks=needs_astropy)])
def test_cpu_peers_run_and_find_the_injected_period(peer, monkeypatch):
    run(bench_peers.Peers(), peer, N, P)
    only(monkeypatch, bench_peers.PeerAccuracy, peer)
    assert run(bench_peers.PeerAccuracy(), peer, N, P)["track_peer_period_error"] < 0.01


@pytest.mark.parametrize("fake, error", [("fixed", None), ("nonsense", None), ("raises", "cuFuncSetBlockShape")])
def test_gpu_peers_run_as_workbench_peers_in_a_process_of_their_own(fake, error, monkeypatch):
    """GTLS and CETRA go through backends.peers (here a stand-in peer that finds
    4.3 d, the shortest trial period, or raises): timed and tracked, or failed."""
    from backends import peers as workbench_peers

    workbench_peers.register_peer("peer:bench-fake", f"tests.peer_fakes:{fake}")
    try:
        monkeypatch.setitem(peers.PEERS, "gtls", ("gpu", "peer:bench-fake"))
        only(monkeypatch, bench_peers.PeerAccuracy, "gtls")
        if error:
            with pytest.raises(RuntimeError, match=error):
                run(bench_peers.PeerAccuracy(), "gtls", N, P)
            return
        timed = run(bench_peers.Peers(), "gtls", N, P)
        tracked = run(bench_peers.PeerAccuracy(), "gtls", N, P)["track_peer_period_error"]
        assert "time_peer" in timed
        if fake == "fixed":
            assert tracked == pytest.approx(4.3 / 3.7 - 1)
        else:  # the shortest trial period: the nonsense is measured, not hidden
            assert tracked > 0.5
    finally:
        workbench_peers.unregister_peer("peer:bench-fake")


@needs_astropy
def test_missing_or_failing_peer_is_skipped_or_reported(monkeypatch):
    monkeypatch.setitem(peers.PEERS, "gtls", ("gpu", "no_such_package_xyz"))
    with pytest.raises(NotImplementedError, match="no_such_package_xyz"):
        bench_peers.Peers().setup("gtls", N, P)
    only(monkeypatch, bench_peers.PeerAccuracy, "gtls")
    with pytest.raises(NotImplementedError, match="no_such_package_xyz"):
        run(bench_peers.PeerAccuracy(), "gtls", N, P)
    only(monkeypatch, bench_peers.PeerAccuracy, "bls")
    monkeypatch.setattr(peers, "run", lambda name, c: {}["boom"])
    with pytest.raises(RuntimeError, match="KeyError"):
        run(bench_peers.PeerAccuracy(), "bls", N, P)


def test_a_backend_or_peer_budget_overrides_its_device_budget(monkeypatch):
    assert cases.work_budget("gpu", "thrust") == ("thrust", cases.WORK_BUDGET["thrust"])
    assert cases.work_budget("gpu", "numba") == ("gpu", cases.WORK_BUDGET["gpu"])
    monkeypatch.setenv("TLS_BENCH_WORK_TLS_FUSED", "10")
    with pytest.raises(NotImplementedError, match="over the tls-fused work budget"):
        bench_peers.Peers().setup("tls-fused", N, P)


# ---- asv result files: the scaling figure and the regression check ----------------

@needs_asv
def test_regression_check_names_a_slower_gpu_result(tmp_path, capsys):
    write_results(tmp_path, [result_set("a" * 40, 1, 1.0), result_set("b" * 40, 2, 1.3)])
    assert bench_regress.main(["--results", str(tmp_path)]) == 1
    assert "bench_stages.Search.time_search('cpu', 500, 1000)" in capsys.readouterr().err


@needs_asv
def test_regression_check_reports_a_slower_peer_without_counting_it(tmp_path, capsys):
    """A peer (another package, timed for comparison) slower on another host is not ours."""
    name = "bench_peers.Peers.time_peer"
    write_results(tmp_path, [result_set("a" * 40, 1, 1.0, name=name), result_set("b" * 40, 2, 1.4, name=name)],
                  name=name)
    assert bench_regress.main(["--results", str(tmp_path)]) == 0
    assert "0 regression(s) (1 peer timing(s) slower, not counted)" in capsys.readouterr().out


@needs_asv
def test_regression_check_passes_within_factor_or_spread(tmp_path):
    write_results(tmp_path / "small", [result_set("a" * 40, 1, 1.0), result_set("b" * 40, 2, 1.05)])
    assert bench_regress.main(["--results", str(tmp_path / "small")]) == 0
    noisy = [result_set("a" * 40, 1, 1.0, spread=0.5), result_set("b" * 40, 2, 1.3, spread=0.5)]
    write_results(tmp_path / "noisy", noisy)
    assert bench_regress.main(["--results", str(tmp_path / "noisy")]) == 0
    assert bench_regress.main(["--results", str(tmp_path / "noisy"), "--factor", "1.01"]) == 0


@needs_asv
def test_regression_check_compares_the_newest_two_and_passes_with_one(tmp_path):
    write_results(tmp_path, [result_set("a" * 40, 3, 1.0)])
    assert bench_regress.main(["--results", str(tmp_path)]) == 0
    write_results(tmp_path, [result_set("b" * 40, 1, 9.0), result_set("c" * 40, 2, 1.0)])
    assert bench_regress.main(["--results", str(tmp_path)]) == 0  # c -> a: faster


@needs_asv
def test_regression_check_compares_each_gpu_model_on_its_own(tmp_path, capsys):
    """H100 and H200 results (machines gpu-<model>): the newest two of each model."""
    write_results(tmp_path, [result_set("a" * 40, 1, 1.0, machine="gpu-nvidia-h200"),
                             result_set("b" * 40, 3, 1.0, machine="gpu-nvidia-h200")], machine="gpu-nvidia-h200")
    h100 = "gpu-nvidia-h100-80gb-hbm3"
    write_results(tmp_path, [result_set("a" * 40, 2, 1.0, machine=h100),
                             result_set("c" * 40, 4, 1.5, machine=h100)], machine=h100)
    assert bench_regress.main(["--results", str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert f"{h100}: aaaaaaaa -> cccccccc: 1 regression(s)" in out.out
    assert "gpu-nvidia-h200: aaaaaaaa -> bbbbbbbb: 0 regression(s)" in out.out
    assert out.err.count("REGRESSION") == 1 and f"REGRESSION {h100}: " in out.err


@needs_asv
def test_a_recorded_regression_counts_only_for_its_own_pair_of_result_sets(tmp_path, capsys):
    """An entry of the acknowledged file (machine, old and new commits,
    benchmark) is reported, not counted; the next result set is compared afresh."""
    name = "bench_stages.Search.time_search('cpu', 500, 1000)"
    known = tmp_path / "known.toml"
    known.write_text(f'[[regression]]\nmachine = "gpu-test"\nold = "{"a" * 8}"\nnew = "{"b" * 8}"\n'
                     f'benchmark = "{name}"\nverdict = "re-timed"\n')
    write_results(tmp_path / "r", [result_set("a" * 40, 1, 1.0), result_set("b" * 40, 2, 1.3)])
    assert bench_regress.main(["--results", str(tmp_path / "r"), "--acknowledged", str(known)]) == 0
    assert "1 recorded with a verdict in" in capsys.readouterr().out
    write_results(tmp_path / "r", [result_set("c" * 40, 3, 1.7)])  # b -> c: not recorded
    assert bench_regress.main(["--results", str(tmp_path / "r"), "--acknowledged", str(known)]) == 1
    assert name in capsys.readouterr().err


@needs_asv
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


def test_variant_table_from_asv_results_names_backends_not_installed_here(tmp_path):
    from benchmarks import select

    data = result_set("a" * 40, 1, 2.0, name=select.ASV_BENCHMARK)
    data["results"][select.ASV_BENCHMARK][0] = [0.5, 0.25]
    data["results"][select.ASV_BENCHMARK][1] = [["'cpu'", "'cupy'"], ["500"], ["1000"]]
    write_results(tmp_path / "results", [data], name=select.ASV_BENCHMARK)
    readme = tmp_path / "README.md"
    readme.write_text("\n".join(select.markers("Test GPU")) + "\n")
    assert select.main(["--asv", "gpu-test", "--gpu", "Test GPU", "--results", str(tmp_path / "results"),
                        "--out", str(tmp_path), "--report", str(tmp_path), "--readme", str(readme)]) == 0
    table = json.loads((tmp_path / "test-gpu.json").read_text())
    assert table["regimes"][0]["fastest"] == "cupy" and table["ranking"] == ["cupy", "cpu"]
    assert "`cupy` | 0.25 | cpu | 2.00x" in readme.read_text() and (tmp_path / "test-gpu.md").exists()
    with pytest.raises(SystemExit):
        select.main(["--asv", "none", "--gpu", "Test GPU", "--results", str(tmp_path / "results")])


def test_import_of_a_second_call_adds_to_the_commits_result_set(tmp_path):
    import bench_import

    here = tmp_path / "here"
    first = write_results(tmp_path / "one", [result_set("f" * 40, 2, 1.0, name="a.time_x")])
    second = write_results(tmp_path / "two", [result_set("e" * 40, 3, 2.0, name="b.time_y")])
    for source in (first, second):
        bench_import.import_results(str(source), "c" * 40, str(here))
    data = json.loads((here / "gpu-test" / "cccccccc-existing-py.json").read_text())
    assert set(data["results"]) == {"a.time_x", "b.time_y"} and data["date"] == 3
    third = result_set("d" * 40, 4, 3.0, name="a.time_x")
    third["results"]["a.time_x"][0] = [None]  # the combination did not run in this call
    bench_import.import_results(str(write_results(tmp_path / "three", [third])), "c" * 40, str(here))
    data = json.loads((here / "gpu-test" / "cccccccc-existing-py.json").read_text())
    assert data["results"]["a.time_x"][0] == [1.0]  # kept from the first call


def test_import_files_new_device_results_under_the_commit_it_ran(tmp_path):
    import bench_import

    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    source = write_results(tmp_path / "device", [result_set("f" * 40, 2, 1.0),  # throwaway repo
                                                 result_set(head, 1, 1.0)])     # carried, known
    written = bench_import.import_results(str(source), "c" * 40, str(tmp_path / "here"))
    names = sorted(os.path.basename(path) for path in written)
    assert names == sorted(["benchmarks.json", "cccccccc-existing-py.json",
                            f"{head[:8]}-existing-py.json", "machine.json"])
    data = json.loads((tmp_path / "here" / "gpu-test" / "cccccccc-existing-py.json").read_text())
    assert data["commit_hash"] == "c" * 40 and data["date"] == 2
    carried = tmp_path / "here" / "gpu-test" / f"{head[:8]}-existing-py.json"
    carried.write_text(json.dumps(json.loads(carried.read_text())))  # committed, laid out otherwise
    again = bench_import.import_results(str(source), "d" * 40, str(tmp_path / "here"))
    assert str(carried) not in again and "\n" not in carried.read_text()  # unchanged: not rewritten
    with pytest.raises(SystemExit):
        bench_import.main([str(source), "abc"])


def test_a_merged_row_keeps_the_layout_asv_writes():
    import bench_import

    columns = ["result", "params", "version", "started_at", "duration"]
    row = [[1.0, 2.0], [["'a'", "'b'"]], "v1"]  # asv dropped the empty tail
    assert bench_import.merged_row(columns, row, row) == row
    assert bench_import.merged_row(columns, row, [[None, 3.0], [["'a'", "'b'"]], "v1"]) == [
        [1.0, 3.0], [["'a'", "'b'"]], "v1"]


def test_host_path_tracks_host_ms_per_curve(monkeypatch):
    monkeypatch.setattr(bench_host, "k2_like", lambda n: [box_light_curve(seed=k) for k in range(n)])
    monkeypatch.setattr(bench_host.HostPath, "N", 2)
    bench = bench_host.HostPath()
    cached = bench.setup_cache()
    assert [0 < bench.track_host_ms_per_curve(cached, lean) < 1000 for lean in (False, True)] == [True, True]
    assert 0 < bench.track_cpu_probe_us(cached, True) < 1e5 and 0 < bench.track_python_probe_us(cached, True) < 1e5


def test_throughput_tracks_rates_and_skips_without_a_gpu(monkeypatch):
    if not backends.gpu.cuda_device_count():
        with pytest.raises(NotImplementedError):
            bench_host.Throughput().setup("pruned")
    monkeypatch.setattr(bench_host, "k2_like", lambda n: [box_light_curve(seed=k) for k in range(n)])
    monkeypatch.setattr(bench_host, "runnable_backend", lambda name, n, p: backends.get_backend("cpu"))
    monkeypatch.setattr(bench_host.Throughput, "N", 2)
    result = run(bench_host.Throughput(), "pruned")
    assert set(result) == {"track_packed_curves_per_second", "track_end_to_end_curves_per_second",
                           "track_lean_curves_per_second", "track_end_to_end_over_packed"}
    assert all(v > 0 for v in result.values()) and result["track_end_to_end_over_packed"] < 2


@needs_asv
def test_regression_check_prints_the_retime_command_for_end_to_end_timings(tmp_path, capsys):
    name = "bench_search.EndToEnd.time_search_warm"  # asv adds the params ('cpu', 500, 1000)
    write_results(tmp_path, [result_set("a" * 40, 1, 1.0, name=name), result_set("b" * 40, 2, 1.3, name=name)],
                  name=name)
    assert bench_regress.main(["--results", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "git archive aaaaaaaa " in out and "asv_retime.py --trees . _ab . --cases cpu:500:1000" in out


def test_retime_command_takes_only_end_to_end_timings():
    names = ["bench_search.EndToEnd.time_search_warm('pruned', 500, 10000)",
             "bench_stages.Search.time_search('cpu', 500, 1000)",
             "bench_search.EndToEnd.time_search_warm('cpu', 4320, 10000)"]
    command = bench_regress.retime_command("0c24ccf7" + "0" * 32, names)
    assert command.endswith("--cases pruned:500:10000 cpu:4320:10000") and "git archive 0c24ccf7 " in command
    assert bench_regress.retime_command("a" * 40, names[1:2]) is None


def test_device_plan_times_every_registered_backend_end_to_end():
    """scripts/gpu_bench.sh names backends in its EndToEnd steps' regexes: a
    backend added to the registry but not to the plan gets no asv history and
    no row in the variant table (tensor, until this test)."""
    import re

    with open(os.path.join(REPO, "scripts", "gpu_bench.sh")) as f:
        script = f.read()
    named = set()
    for alternatives in re.findall(r"\$e2e\\\('\(?([\w|]+)\)?'", script):
        named.update(alternatives.split("|"))
    for listed in re.findall(r"for backend in ([\w ]+); do step", script):
        named.update(listed.split())
    assert named == set(backends.registry._REGISTRY) - {"reference"}
