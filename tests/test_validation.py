"""validation: metrics, alias flagging, the CPU TLS cache, journal/resume,
interrupts and exit codes, with stub searches on tiny inputs."""

import math
import types

import numpy as np
import pandas as pd
import pytest

from datasets import synthetic
from validation import cases, metrics, outputs, processes, recover, runs, store

TINY = cases.Case("tiny", "synthetic", dict(seed=5, preset="k2", baseline=10.0, cadence_min=30.0, gaps=(),
                                            ndata=None, noise_ppm=300.0, b=0.2, snr=40.0, period=2.3))
TRUTH = dict(name="b", period=5.0, t0=1.0, duration=0.2, depth_ppm=1000.0, snr=20.0)


def found(period=5.0, t0=1.0, duration=0.2, depth_ppm=1000.0, sde=20.0, runtime=1.0, **kw):
    out = dict(period=period, t0=t0, duration=duration, depth_ppm=depth_ppm, sde=sde, snr=15.0,
               fap=1e-4, runtime_s=runtime, error=None, name="stub", device="none")
    out.update(kw)
    return out


# ---------------------------------------------------------------- metrics
def test_alias_flags():
    assert metrics.alias(10.0, 5.0) == "2x"
    assert metrics.alias(5.0 / 3, 5.0) == "1/3x"
    assert metrics.alias(7.3, 5.0) == ""
    assert metrics.alias(math.nan, 5.0) == ""


def test_compare_recovers_and_flags():
    flags = metrics.compare(found(period=5.04, t0=1.0 + 3 * 5.0 + 0.05), TRUTH)
    assert flags["recovered"] and flags["detected"] and not flags["false_alarm"]
    assert flags["duration_ok"] and flags["depth_ok"]
    flags = metrics.compare(found(duration=0.25, depth_ppm=1100.0), TRUTH)
    assert flags["recovered"] and not flags["duration_ok"] and not flags["depth_ok"]


def test_compare_misses():
    assert not metrics.compare(found(period=5.1), TRUTH)["recovered"]  # 2 % off
    assert not metrics.compare(found(t0=1.11), TRUTH)["recovered"]  # > half a duration
    alias = metrics.compare(found(period=10.0), TRUTH)
    assert alias["alias"] == "2x" and not alias["recovered"] and alias["false_alarm"]
    weak = metrics.compare(found(sde=8.0), TRUTH)
    assert weak["recovered"] and not weak["detected"] and not weak["false_alarm"]


def test_compare_without_planet():
    assert metrics.compare(found(sde=12.0), None)["false_alarm"]
    assert not metrics.compare(found(sde=5.0), None)["false_alarm"]
    failed, _ = runs.failed("boom")
    assert metrics.compare(failed, TRUTH) == dict(
        period_ok=False, alias="", t0_ok=False, duration_ok=False, depth_ok=False,
        recovered=False, detected=False, false_alarm=False)


def test_agreement():
    a = metrics.agreement(found(sde=10.4, runtime=1.0), found(sde=10.0, runtime=4.0))
    assert a["sde_agree"] and a["period_agree"] and a["speed_ratio"] == 4.0
    assert not metrics.agreement(found(sde=10.6), found(sde=10.0))["sde_agree"]
    assert not metrics.agreement(found(period=5.1), found())["period_agree"]


def verdict_table(backend_recovered, cpu_detected, backend_detected):
    n = len(backend_recovered)
    return pd.DataFrame(dict(case_id=[f"c{i}" for i in range(n)], step=0,
                             backend_recovered=backend_recovered, cpu_detected=cpu_detected,
                             backend_detected=backend_detected))


def test_verdict():
    assert metrics.verdict(verdict_table([True, False], [True, False], [True, False]))[0]
    ok, reasons = metrics.verdict(verdict_table([False, True], [True, True], [False, True]))
    assert not ok and "misses 1 case" in reasons[0] and "c0[0]" in reasons[0]
    # recovered but below the SDE threshold on 3 of 10: more than the margin
    n = 10
    table = verdict_table([True] * n, [True] * n, [False] * 3 + [True] * 7)
    ok, reasons = metrics.verdict(table, margin=0.1)
    assert not ok and "3 fewer" in reasons[0]
    assert metrics.verdict(verdict_table([True] * n, [True] * n, [False] + [True] * 9))[0]


def test_snr_bins():
    table = pd.DataFrame(dict(truth_snr=[0.0, 4.0, 12.0, 50.0], backend_detected=[False, False, True, True],
                              cpu_detected=[False, True, True, True],
                              backend_false_alarm=[True, False, False, False],
                              cpu_false_alarm=[False] * 4))
    summary = metrics.summary_by_snr(table)
    assert list(summary["snr_bin"]) == ["null", "0-5", "10-15", "30-inf"]
    assert list(summary["cpu_detection_rate"]) == [0.0, 1.0, 1.0, 1.0]
    assert int(summary["backend_false_alarms"].sum()) == 1


# ---------------------------------------------------------------- store and cache
def test_store_roundtrip_and_bad_files(tmp_path):
    path = tmp_path / "a" / "rec.npz"
    store.save(path, {"x": 1.5, "n": np.int64(3), "nan": math.nan}, {"p": np.arange(3.0)})
    scalars, arrays = store.load(path)
    assert scalars["x"] == 1.5 and scalars["n"] == 3 and math.isnan(scalars["nan"])
    assert np.array_equal(arrays["p"], [0, 1, 2])
    assert store.load(tmp_path / "missing.npz") is None
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    assert store.load(tmp_path / "bad.npz") is None
    with pytest.raises(TypeError):
        store.save(tmp_path / "c.npz", {"x": object()})
    assert not list((tmp_path).glob("*.tmp"))  # a failed write leaves nothing behind


def test_a_record_dir_lists_stamps_and_clears(tmp_path):
    records = store.RecordDir(tmp_path / "r")
    records.save("a", {"x": 1})
    records.write_file("b", lambda tmp: tmp.write_bytes(b"not a record"))
    (tmp_path / "r" / ".c.npz.0123.tmp").write_bytes(b"")  # a write cut short
    records.stamp({"backend": "cpu"})
    records.stamp({"backend": "cpu"})  # a re-run of the same
    assert records.keys() == ["a", "b"] and records.load("b") is None and records.load("a")[0] == {"x": 1}
    with pytest.raises(ValueError, match="holds results of {'backend': 'cpu'}, not {'backend': 'simple'}"):
        records.stamp({"backend": "simple"})
    records.clear()
    assert records.keys() == [] and not (tmp_path / "r").exists()


class StubTLS:
    def __init__(self, fail=False):
        self.calls = 0
        self.fail = fail

    def __call__(self, t, y, dy, options, use_threads=1):
        self.calls += 1
        if self.fail:
            raise RuntimeError("no luck")
        return found(period=float(t.size)), {"periods": np.arange(3.0), "power": np.ones(3)}


def test_tls_cache_hits_and_misses(tmp_path):
    t, y, dy = np.arange(5.0), np.ones(5), np.ones(5)
    stub = StubTLS()
    cache = runs.TLSCache(tmp_path, search=stub)
    assert runs.TLSCache(tmp_path).runner == "fused"
    first, _ = cache(t, y, dy, {})
    again, arrays = cache(t, y, dy, {})
    assert stub.calls == 1 and cache.hits == 1 and again["cached"] and not first["cached"]
    assert again["period"] == 5.0 and np.array_equal(arrays["power"], np.ones(3))
    cache(t, y, dy, {"period_max": 3.0})  # other options: another key
    cache(t, y * 1.0001, dy, {})  # other data: another key
    cache(t, y, None, {})
    assert stub.calls == 4
    assert runs.cache_key(t, y, dy, {}) != runs.cache_key(t, y, dy, {}, runner="default")


def test_failures_are_reported_not_cached(tmp_path):
    stub = StubTLS(fail=True)
    cache = runs.TLSCache(tmp_path, search=stub)
    out, arrays = cache(np.arange(5.0), np.ones(5), None, {})
    assert out["error"] == "RuntimeError: no luck" and math.isnan(out["period"]) and arrays == {}
    cache(np.arange(5.0), np.ones(5), None, {})
    assert stub.calls == 2


# ---------------------------------------------------------------- cases
def test_suites_are_large_enough_and_seeded():
    assert len(cases.suite("synthetic")) >= 500
    syn = cases.suite("synthetic")
    ndata = [c.params["ndata"] for c in syn if c.params["ndata"]]
    assert min(ndata) == 500 and max(ndata) == 100_000
    assert {c.params["b"] for c in syn} >= {0.0, 1.0} and 0.0 in {c.params["snr"] for c in syn}
    assert [c.id for c in cases.suite("synthetic", 1)] != [c.id for c in syn]
    quick = cases.suite("quick")
    assert {c.kind for c in quick} == {"synthetic", "real"} and len(quick) <= 12
    assert len({c.id for c in cases.suite("all")}) == len(cases.suite("all"))
    with pytest.raises(ValueError, match="unknown suite"):
        cases.suite("kepler")


def test_materialize_grazing_beyond_reach_gets_the_deepest_transit():
    params = dict(seed=3, preset="tess", cadence_min=2.0, baseline=27.0, ndata=1000, gaps=(),
                  noise_ppm=4000.0, b=1.0, snr=300.0)
    data = cases.materialize(cases.Case("graze", "synthetic", params))
    truth = data.truths[0]
    assert truth["rp_rs"] == synthetic.RP_RS_RANGE[1] and truth["b"] == 1.0 and truth["snr"] > 0
    with pytest.raises(ValueError, match="exceeds"):  # other errors still surface
        cases.materialize(cases.Case("x", "synthetic", dict(params, ndata=10**6)))


def test_materialize_real_and_injected():
    k2 = cases.suite("k2")
    real = cases.materialize(k2[0])  # K2-3: planet d has only 2 transits, beyond TLS's grid
    assert [t["name"] for t in real.truths] == ["K2-3 b", "K2-3 c"]
    assert "K2-3 d outside the searched periods" in real.info["steps"]
    inj = cases.materialize(next(c for c in k2 if c.kind == "injected"))
    assert len(inj.truths) == 1 and inj.truths[0]["snr"] > 3
    with pytest.raises(ValueError, match="unknown case kind"):
        cases.materialize(cases.Case("x", "nope", {}))


# ---------------------------------------------------------------- running a suite
PLANETS = [dict(TRUTH), dict(TRUTH, name="c", period=7.0, t0=2.0, snr=10.0)]


def fake_input(case):
    t = np.linspace(0.0, 30.0, 300)
    truths = [] if case.params.get("null") else PLANETS[: case.params.get("planets", 1)]
    return cases.Input(t, np.ones_like(t), np.full_like(t, 1e-3), truths, dict(target="fake"))


def ctrl_c():
    raise KeyboardInterrupt


class StubSearch:
    """Finds the planets in order of SNR (one per search), or misses them;
    ``interrupt()`` after ``interrupt_after`` searches."""

    def __init__(self, miss=(), sde=20.0, interrupt_after=None, interrupt=ctrl_c):
        self.miss, self.sde, self.calls, self.interrupt_after = set(miss), sde, 0, interrupt_after
        self.interrupt, self.sizes = interrupt, []

    def __call__(self, t, y, dy, options):
        self.calls += 1
        if self.interrupt_after is not None and self.calls > self.interrupt_after:
            self.interrupt()
        self.sizes.append(t.size)
        step = 0 if t.size == 300 else 1
        planet = PLANETS[step]
        if (options.get("case"), step) in self.miss:
            return found(period=3.3, t0=0.0, sde=self.sde), {}
        return found(period=planet["period"], t0=planet["t0"], sde=self.sde), {
            "periods": np.arange(3.0), "power": np.ones(3)}


def test_run_case_masks_each_detection(monkeypatch):
    monkeypatch.setattr(cases, "materialize", fake_input)
    case = cases.Case("two", "synthetic", {"planets": 2}, {"case": "two"})
    cpu, backend = StubSearch(), StubSearch()
    rows, arrays = recover.run_case(case, {"backend": backend, "cpu": cpu})
    assert [r["planet"] for r in rows] == ["b", "c"]
    assert all(r["backend_recovered"] and r["cpu_recovered"] for r in rows)
    assert cpu.sizes[1] < cpu.sizes[0]  # planet b's transits were masked before step 1
    assert "cpu_power" in arrays and "backend_power" in arrays


@pytest.fixture
def fake_suite(monkeypatch, tmp_path):
    suite = [cases.Case("one", "synthetic", {}, {"case": "one"}),
             cases.Case("two", "synthetic", {"planets": 2}, {"case": "two"}),
             cases.Case("null", "synthetic", {"null": True}, {"case": "null"})]
    monkeypatch.setattr(cases, "suite", lambda name, seed=0: suite)
    monkeypatch.setattr(cases, "materialize", fake_input)
    stubs = {}

    def use(backend=None, cpu=None):
        stubs.clear()
        stubs["backend"], stubs["cpu"] = backend or StubSearch(), cpu or StubSearch()
        def sides(name, cache_dir, threads, tls_default):
            stubs["set_up"] = stubs.get("set_up", 0) + 1
            extra = {"tlsdefault": StubSearch()} if tls_default else {}
            return {"backend": stubs["backend"], "cpu": stubs["cpu"], **extra}

        monkeypatch.setattr(recover, "searches", sides)
        return stubs

    return tmp_path, use


def run_main(out, *extra):
    return recover.main(["--backend", "cpu", "--out", str(out), *extra])


def test_main_passes_and_writes_reports(fake_suite, capsys):
    out, use = fake_suite
    use()
    assert run_main(out) == 0
    for suffix in (".csv", ".parquet", ".md"):
        assert (out / f"recover_quick_cpu{suffix}").exists()
    assert len(list((out / "figures").glob("recover_quick_cpu_*.png"))) == 3
    table = pd.read_parquet(out / "recover_quick_cpu.parquet")
    assert len(table) == 4 and table["cpu_recovered"].sum() == 3
    assert table.loc[table["case_id"] == "null", "cpu_false_alarm"].item()
    assert "SDE backend" in capsys.readouterr().out


def test_main_fails_when_backend_misses(fake_suite, capsys):
    out, use = fake_suite
    use(backend=StubSearch(miss={("two", 1)}))
    assert run_main(out) == 1
    assert "misses 1 case(s)" in capsys.readouterr().err


def test_weak_cpu_detections_do_not_fail_the_backend(fake_suite):
    out, use = fake_suite
    use(backend=StubSearch(miss={("two", 1)}, sde=8.0), cpu=StubSearch(sde=8.0))
    assert run_main(out) == 0


def test_resume_interrupt_and_fresh(fake_suite, capsys):
    out, use = fake_suite
    stubs = use(backend=StubSearch(interrupt_after=1))
    assert run_main(out) == 130  # interrupted in the 2nd case: the 1st is kept
    assert "1/3 cases saved" in capsys.readouterr().err
    stubs = use()
    assert run_main(out) == 0
    assert stubs["backend"].calls == 3  # case "one" resumed from the journal
    stubs = use()
    assert run_main(out) == 0 and stubs["backend"].calls == 0
    assert "set_up" not in stubs  # nothing left to run: no search is set up (or warmed up)
    stubs = use()
    assert run_main(out, "--fresh") == 0 and stubs["backend"].calls == 4


def test_a_ctrl_c_wrapped_by_numba_stops_the_run_and_is_not_journaled(fake_suite, capsys):
    """Ctrl-C inside numba code comes out as a SystemError: an interrupt, not a
    backend failure that would be journaled and fail every resume."""
    from tests.test_interrupts import numba_interrupt

    out, use = fake_suite
    use(backend=runs.guarded(StubSearch(interrupt_after=1, interrupt=numba_interrupt)))
    assert run_main(out) == 130
    assert "1/3 cases saved" in capsys.readouterr().err
    use()
    assert run_main(out) == 0
    assert pd.read_csv(out / "recover_quick_cpu.csv")["backend_error"].isna().all()


def test_runs_write_outside_the_source_tree_by_default(fake_suite, monkeypatch):
    out, use = fake_suite
    use()
    monkeypatch.setenv("TLS_WORKBENCH_OUT", str(out / "runs"))
    assert recover.main(["--backend", "cpu"]) == 0
    assert (out / "runs" / "recover_quick_cpu.csv").exists()
    assert (out / "runs" / "cache" / "runs" / "quick-cpu-seed0" / "one.npz").exists()
    monkeypatch.delenv("TLS_WORKBENCH_OUT")
    monkeypatch.setenv("XDG_DATA_HOME", str(out / "xdg"))
    assert outputs.default_out() == out / "xdg" / "tls-workbench" / "runs"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(out / "home"))
    assert outputs.default_out() == out / "home" / ".local" / "share" / "tls-workbench" / "runs"


def test_bad_arguments(fake_suite, capsys):
    out, use = fake_suite
    assert recover.main(["--backend", "no-such-backend", "--out", str(out)]) == 2
    assert "unknown backend" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        recover.main(["--jobs", "0"])
    with pytest.raises(SystemExit):
        recover.main(["--suite", "kepler"])


def test_tls_default_side(fake_suite):
    out, use = fake_suite
    use()
    assert run_main(out, "--tls-default") == 0
    table = pd.read_csv(out / "recover_quick_cpu.csv")
    assert table["tlsdefault_recovered"].sum() == 3
    assert "| tls_default_recovered | 3 |" in (out / "recover_quick_cpu.md").read_text()
    assert (out / "cache" / "runs" / "quick-cpu-seed0-tlsdefault").is_dir()


def test_warm_up_runs_each_search_and_swallows_failures():
    stub, broken = StubSearch(), StubTLS(fail=True)
    runs.warm_up(stub, broken)
    assert stub.calls == 1 and broken.calls == 1


def test_limit_and_unreadable_journal_entries(fake_suite):
    out, use = fake_suite
    use()
    assert run_main(out, "--limit", "1") == 0
    assert list(pd.read_csv(out / "recover_quick_cpu.csv")["case_id"]) == ["one"]
    (out / "cache" / "runs" / "quick-cpu-seed0" / "one.npz").write_bytes(b"garbage")
    stubs = use()
    assert run_main(out, "--limit", "1") == 0 and stubs["backend"].calls == 1


def test_real_searches_on_a_tiny_curve(tmp_path):
    """The cpu backend and CPU TLS through the real code path (cache included)."""
    case = TINY
    sides = {"backend": lambda *a: runs.backend_search("cpu", *a),
             "cpu": runs.TLSCache(tmp_path, use_threads=1)}
    rows, arrays = recover.run_case(case, sides)
    row = rows[0]
    assert row["cpu_recovered"] and row["backend_recovered"] and row["sde_agree"]
    assert row["backend_period"] == pytest.approx(row["cpu_period"], rel=1e-12)
    assert np.isfinite([row["cpu_fap"], row["cpu_snr"], row["cpu_runtime_s"]]).all()
    assert {"cpu_power", "backend_power", "cpu_fold_y", "cpu_model_y"} <= set(arrays)
    again, _ = recover.run_case(case, sides)
    assert again[0]["cpu_cached"] and again[0]["cpu_sde"] == row["cpu_sde"]


def test_verdict_leaves_out_cases_the_backend_refuses_by_design():
    table = verdict_table([True, False], [True, True], [True, False])
    table["backend_error"] = [None, "backends.protocol.InputTooLarge: backend 'simple' holds ..."]
    assert metrics.verdict(table)[0]
    table["backend_error"] = [None, "RuntimeError: launch failed"]
    assert not metrics.verdict(table)[0]


# ---------------------------------------------------------------- --jobs worker processes


def test_thread_limits_reach_spawned_processes_and_are_undone(monkeypatch):
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    with processes.thread_limits(2), ProcessPoolExecutor(1, multiprocessing.get_context("spawn")) as pool:
        seen = [pool.submit(os.getenv, name).result() for name in processes.THREAD_VARIABLES]
    assert seen == ["2"] * len(processes.THREAD_VARIABLES)
    assert os.environ["OMP_NUM_THREADS"] == "7" and "NUMBA_NUM_THREADS" not in os.environ


def test_deaths_name_the_signal_or_status():
    import multiprocessing
    import os
    import sys

    ctx = multiprocessing.get_context("spawn")
    children = [ctx.Process(target=os.abort), ctx.Process(target=sys.exit, args=(4,))]
    for p in children:
        p.start()
        p.join()
    assert processes.deaths(children) == (f"pid {children[0].pid} killed by SIGABRT, "
                                          f"pid {children[1].pid} exited with status 4")


class KillWorkersOnFirstCase:
    """A progress bar that, once the first case is saved, kills the worker processes
    (the children started since it was made: not another test's, such as a Dask cluster's)."""

    def __init__(self):
        import multiprocessing

        self.others = {child.pid for child in multiprocessing.active_children()}

    def update(self, n=1):
        import multiprocessing
        import os
        import signal

        for child in multiprocessing.active_children():
            if child.pid not in self.others:
                os.kill(child.pid, signal.SIGKILL)


def test_jobs_run_cases_in_processes_and_a_killed_worker_is_named(tmp_path):
    journal = recover.Journal(tmp_path / "runs")
    pending = [cases.Case(f"tiny{k}", "synthetic", dict(TINY.params, seed=k)) for k in range(3)]
    progress = types.SimpleNamespace(n=0)
    progress.update = lambda n=1: setattr(progress, "n", progress.n + n)
    recover.execute(pending, journal, 2, progress, "cpu", tmp_path / "tls", 1, False)
    assert progress.n == 3 and all(journal.done(c.id) for c in pending)
    assert journal.load("tiny1")[0][0]["backend_recovered"]

    # many cases: the workers cannot finish them all before the parent kills them (on a busy CI core)
    more = [cases.Case(f"more{k}", "synthetic", dict(TINY.params, seed=10 + k)) for k in range(24)]
    with pytest.raises(processes.WorkerDied, match="killed by SIGKILL.*run the same command again"):
        recover.execute(more, journal, 2, KillWorkersOnFirstCase(), "cpu", tmp_path / "tls", 1, False)
    assert 1 <= sum(journal.done(c.id) for c in more) < 24
