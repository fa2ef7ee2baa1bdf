"""Peers (``backends.peers``): stand-in peers (``tests/peer_fakes.py``) in
their worker processes, every way a peer can fail recorded per search with the
run going on, the registry's and validation's view of peer names, and the
mapping of TLS's options to GTLS and CETRA (their packages' own keywords, read
from their sources where they are installed; no GPU needed)."""

import ast
import importlib.util
import math
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import box_light_curve

import backends
from backends import peers
from backends.peers import cetra, gtls, outcome
from tests.peer_fakes import BEHAVIOURS
from validation import cases, recover, runs

FAKES = ("fixed", "segfault", "exits", "hang", "raises", "nonsense", "mixed", "unavailable")


@pytest.fixture(scope="module", autouse=True)
def fake_peers():
    for fake in FAKES:
        peers.register_peer(f"peer:fake-{fake}", f"tests.peer_fakes:{fake}")
    yield
    for fake in FAKES:
        peers.unregister_peer(f"peer:fake-{fake}")


@pytest.fixture(scope="module")
def lc():
    return box_light_curve()


def search(fake, lc, **options):
    return peers.search(f"peer:fake-{fake}", *lc, **options)


def worker_pid(fake):
    return peers._WORKERS[f"peer:fake-{fake}"].process.pid


def test_a_peer_runs_in_a_long_lived_process_of_its_own(lc):
    import os

    first = search("fixed", lc, period_max=8.0)
    assert first["status"] == "ok" and first["error"] is None
    assert (first["period"], first["sde"], first["depth_ppm"]) == (4.3, 25.0, 2000.0)
    assert math.isnan(first["fap"]) and first["runtime_s"] >= 0
    assert first["name"] == "peer:fake-fixed" and first["device"].startswith("CPU")
    pid = worker_pid("fixed")
    assert pid != os.getpid()
    assert search("fixed", lc)["status"] == "ok" and worker_pid("fixed") == pid


@pytest.mark.parametrize("fake, status, why", [
    ("segfault", "crashed", "crashed: peer process killed by SIGSEGV"),
    ("exits", "crashed", "crashed: peer process exited with status 3"),
    ("raises", "failed", "failed: RuntimeError: cuFuncSetBlockShape failed: invalid resource handle"),
])
def test_a_crash_or_a_failure_is_recorded_and_the_process_replaced(fake, status, why, lc):
    found = search(fake, lc)
    assert found["status"] == status and found["error"] == why
    assert all(math.isnan(found[key]) for key in outcome.FOUND)
    assert peers._WORKERS[f"peer:fake-{fake}"].process is None  # the next call starts another


def test_a_hang_is_cut_at_the_timeout(lc, monkeypatch):
    monkeypatch.setenv(peers.TIMEOUT_VARIABLE, "1.5")
    found = search("hang", lc)
    assert found["status"] == "timeout" and found["runtime_s"] == 1.5
    assert found["error"] == "timeout: no result after 1.5 s (peer process killed)"
    assert search("hang", lc, timeout=0.5)["error"].startswith("timeout: no result after 0.5 s")


def test_nonsense_is_recorded_with_its_values(lc):
    found = search("nonsense", lc)
    assert found["status"] == "nonsense" and found["period"] < 1.0 and found["snr"] == 30.0
    assert found["error"].startswith("nonsense: sde is nan; period 0.6")
    assert found["error"].endswith("d is the shortest trial period")


def test_a_peer_that_fails_on_one_light_curve_goes_on_with_the_next(lc):
    """``mixed`` behaves by the number of points: crash, then a fresh process finds the planet."""
    t, y, dy = lc
    crash = np.searchsorted(t, 15.0)  # a size that segfaults
    crash += (1 - crash) % 6
    assert search("mixed", (t[:crash], y[:crash], dy[:crash]))["status"] == "crashed"
    fine = crash - 1
    assert search("mixed", (t[:fine], y[:fine], dy[:fine]))["status"] == "ok"


def test_ctrl_c_while_waiting_ends_the_worker(lc):
    def ctrl_c(signum, frame):
        worker = peers._WORKERS.get("peer:fake-hang")
        if worker is None or worker.process is None:  # not waiting yet (the grid took over 1 s on a busy host)
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            return
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            search("hang", lc, timeout=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert peers._WORKERS["peer:fake-hang"].process is None  # its answer cannot reach the next call


@pytest.mark.parametrize("found, why", [
    (dict(period=4.3, t0=1.0, duration=0.1, sde=20.0), []),
    (dict(period=math.nan, t0=1.0, duration=0.1, sde=math.nan), ["period is nan", "sde is nan"]),
    (dict(period=20.0, t0=1.0, duration=0.1, sde=9.0), ["period 20 d is the longest trial period"]),
    (dict(period=30.0, t0=1.0, duration=0.1, sde=9.0), ["period 30 d is outside the periods searched (0.6-20 d)"]),
    (dict(period=4.3, t0=1.0, duration=5.0, sde=9.0), ["duration 5 d is not between 0 and the period"]),
])
def test_what_counts_as_nonsense(found, why):
    assert outcome.problems(found, np.array([20.0, 4.0, 0.6])) == why


def test_numbers_of_any_kind():
    assert outcome.number(np.float32(2.5)) == 2.5
    assert all(math.isnan(outcome.number(v)) for v in (None, np.ma.masked, "x", [1, 2]))
    assert outcome.judged(None, 1.0, np.array([1.0, 2.0]))["status"] == "nonsense"


def test_names_and_availability():
    why = backends.available_backends()
    assert why["peer:fake-unavailable"] == "no FakeGPU here" and why["peer:fake-fixed"] is None
    assert {"peer:gtls", "peer:cetra"} <= set(why)
    assert not any(peers.is_peer(name) for name in backends.available_methods())
    if importlib.util.find_spec("gputls") is None:
        assert why["peer:gtls"] == "Python package 'gputls' is not installed"
    with pytest.raises(backends.BackendUnavailable, match="'peer:fake-unavailable' cannot run here: no FakeGPU"):
        peers.require("peer:fake-unavailable")
    with pytest.raises(ValueError, match="unknown peer 'peer:nope'; known peers: peer:gtls, peer:cetra"):
        peers.require("peer:nope")
    with pytest.raises(ValueError, match="a peer's name starts with 'peer:'"):
        peers.register_peer("gtls2", "tests.peer_fakes:fixed")


def test_peers_are_not_tls_backends(lc):
    with pytest.raises(ValueError, match="is a peer .* not a TLS backend: run it with backends.peers.search"):
        backends.search(*lc, backend="peer:fake-fixed")
    with pytest.raises(ValueError, match="unknown backend 'nope'; known backends: auto, cpu.*; peers: peer:gtls"):
        backends.get_backend("nope")
    from transitleastsquares.backends import available_backends as tls_names

    assert not any("peer" in name for name in tls_names())


def test_bad_options_are_the_callers_error(lc):
    with pytest.raises(ValueError, match="did you mean 'period_max'"):
        search("fixed", lc, perod_max=5.0)


# ---- validation: a peer's rows in the same reports -------------------------------

BEHAVIOUR = {name: k for k, name in enumerate(BEHAVIOURS)}  # a case per behaviour of the mixed peer


def fake_input(case):
    """A box light curve whose size tells the mixed peer what to do."""
    t, y, dy = box_light_curve()
    n = 600 + BEHAVIOUR[case.id]  # 600 % len(BEHAVIOURS) == 0
    truth = dict(name="b", period=4.3, t0=1.1, duration=0.12, depth_ppm=2000.0, snr=20.0)
    return cases.Input(t[:n], y[:n], dy[:n], [truth], dict(target="fake"))


def cpu_finds_the_planet(t, y, dy, options, use_threads=1, runner=None):
    found = dict.fromkeys(runs.FIELDS, 0.0)
    found.update(period=4.3, t0=1.1, duration=0.12, depth_ppm=2000.0, sde=20.0, error=None)
    return found, {}


def test_recover_records_each_failure_per_case_and_goes_on(tmp_path, monkeypatch):
    suite = [cases.Case(name, "synthetic", {}) for name in BEHAVIOUR]
    monkeypatch.setattr(cases, "suite", lambda name, seed=0: suite)
    monkeypatch.setattr(cases, "materialize", fake_input)
    monkeypatch.setattr(runs, "tls_search", cpu_finds_the_planet)
    monkeypatch.setenv(peers.TIMEOUT_VARIABLE, "2")
    assert recover.main(["--backend", "peer:fake-mixed", "--out", str(tmp_path)]) == 1
    table = pd.read_csv(tmp_path / "recover_quick_peer-fake-mixed.csv").set_index("case_id")
    errors = table["backend_error"].fillna("")
    assert errors["fixed"] == "" and table.loc["fixed", "backend_recovered"]
    assert errors["segfault"] == "crashed: peer process killed by SIGSEGV"
    assert errors["exit"] == "crashed: peer process exited with status 3"
    assert errors["hang"].startswith("timeout: no result after 2 s")
    assert errors["raises"].startswith("failed: RuntimeError: cuFuncSetBlockShape failed")
    assert errors["nonsense"].startswith("nonsense: sde is nan; period")
    assert table.loc["nonsense", "backend_period"] < 1.0  # kept, as the peer gave it
    assert (table["backend_name"] == "peer:fake-mixed").all() and table["cpu_recovered"].all()
    report = (tmp_path / "recover_quick_peer-fake-mixed.md").read_text()
    assert "# Injection-recovery: peer:fake-mixed vs CPU transitleastsquares" in report
    assert "| backend_errors | 5 |" in report
    assert "| segfault | 0 | crashed: peer process killed by SIGSEGV |" in report
    assert (tmp_path / "cache" / "runs" / "quick-peer-fake-mixed-seed0").is_dir()


def test_recover_refuses_a_peer_that_cannot_run(tmp_path, capsys):
    assert recover.main(["--backend", "peer:fake-unavailable", "--out", str(tmp_path)]) == 2
    assert "error: peer 'peer:fake-unavailable' cannot run here: no FakeGPU here" in capsys.readouterr().err
    assert recover.main(["--backend", "peer:nope", "--out", str(tmp_path)]) == 2
    assert "unknown peer 'peer:nope'" in capsys.readouterr().err
    for peer in ("peer:gtls", "peer:cetra"):  # here: no package or no GPU
        why = peers.missing(peer)
        if why:
            assert recover.main(["--backend", peer, "--out", str(tmp_path)]) == 2
            assert f"error: peer '{peer}' cannot run here: {why}" in capsys.readouterr().err


# ---- how TLS's options reach GTLS and CETRA -----------------------------------------

PERIODS = np.geomspace(20.0, 0.6, 50)


def test_gtls_gets_tls_periods_defaults_and_an_integer_oversampling():
    kwargs = gtls.arguments(PERIODS, dict(oversampling_factor=2.6, R_star_min=0.2, use_threads=4,
                                          SDE_detrend="hybrid"))
    assert np.array_equal(kwargs.pop("periods"), np.sort(PERIODS))
    assert kwargs == dict(R_star_min=0.2, T0_fit_margin=0.01, oversampling_factor=3,
                          show_progress_bar=False)
    assert gtls.time_offset(np.array([1.5, 9.0])) == 0.0
    assert gtls.time_offset(np.array([0.0, 9.0])) == -1.0  # GTLS keeps times > 0 only


def test_cetra_gets_tls_stellar_limits_and_duration_range():
    chosen = cetra.settings(PERIODS, dict(R_star_max=2.0, duration_grid_step=1.05))
    assert chosen["limits"] == dict(min_star_radius=0.13, max_star_radius=2.0, min_star_mass=0.1,
                                    max_star_mass=1.0)
    durations = chosen["durations"]
    assert 0.01 < durations["min_duration"] < 0.03 < 0.4 < durations["max_duration"] < 0.8
    assert durations["duration_log_step"] == 1.05 and chosen["model"] == "b32"
    assert cetra.settings(PERIODS, dict(transit_template="grazing"))["model"] == "b99"
    with pytest.raises(ValueError, match="CETRA cannot match TLS's transit_template='box', u: its transit"):
        cetra.settings(PERIODS, dict(transit_template="box", u=[0.3]))


def package_source(package, path):
    spec = importlib.util.find_spec(package)
    if spec is None:
        pytest.skip(f"{package} is not installed")
    return ast.parse((Path(spec.submodule_search_locations[0]) / path).read_text())


def keywords(tree, function):
    return {arg.arg for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == function
            for arg in node.args.args + node.args.kwonlyargs}


def test_gtls_keywords_are_gtls_own():
    tree = package_source("gputls", "constants.py")
    valid = next(ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and getattr(node.targets[0], "id", "") == "VALID_PARAMETERS")
    assert set(gtls.PASSED) | set(gtls.arguments(PERIODS, {})) <= set(valid)


def test_cetra_keywords_are_cetra_own():
    tree = package_source("cetra", "cetra.py")
    chosen = cetra.settings(PERIODS, {})
    assert set(chosen["durations"]) | {"transit_model", "verbose"} <= keywords(tree, "__init__")
    assert set(chosen["limits"]) | {"periods", "random_order", "verbose", "max_duration_fraction"} \
        <= keywords(tree, "period_search")
