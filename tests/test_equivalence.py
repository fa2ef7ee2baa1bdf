"""TLS's own backend contract on the seven kinds of case (``validation.equivalence``):
the cases are what they claim, TLS's no-fit behaviour is pinned, ``cpu`` is
exact, perturbed backends are caught, and every ``exact`` flag (ours and the
one TLS's registry sees) agrees with the classification."""

import math

import numpy as np
import pytest

import backends
from backends import contract
from backends.implementations.cpu import CPUBackend
from backends.protocol import PeriodStats
from tests.conftest import requires_gpu
from validation import equivalence

KINDS = ("k2_window", "earth_like_dy", "narrow_stellar_limits", "centred_time", "no_fit",
         "short_light_curve", "box_template")


def case(name):
    return next(c for c in equivalence.cases() if c.name == name)


class ScaledChi2(CPUBackend):
    """``cpu`` with every per-period chi2 scaled by ``factor`` (SR and SDE unchanged)."""

    name = "scaled-chi2"
    exact = False
    factor = 1.0

    def search(self, plan, periods, progress=None):
        stats = super().search(plan, periods, progress)
        return PeriodStats(stats.chi2 * self.factor, stats.rows, stats.depths)


def scaled(factor, exact=False):
    return type("Scaled", (ScaledChi2,), dict(factor=factor, exact=exact))


# ---- the cases ---------------------------------------------------------------------------

def test_the_seven_kinds_are_seeded():
    first = equivalence.cases()
    assert tuple(c.name for c in first) == KINDS
    equivalence.cases.cache_clear()
    for before, again in zip(first, equivalence.cases()):
        assert again is not before
        np.testing.assert_array_equal(again.t, before.t)  # same seeds, same data
        np.testing.assert_array_equal(again.y, before.y)


def test_k2_window_has_k2_cadence_times_and_a_gap():
    c = case("k2_window")
    steps = np.diff(c.t) * 1440
    assert np.median(steps) == pytest.approx(29.4)
    assert steps.max() > 1440  # the 1.5 d gap
    assert c.t.min() >= equivalence.K2_START and 26 < np.ptp(c.t) < 27


def test_earth_like_transit_is_shallow_long_period_with_varying_dy():
    c = case("earth_like_dy")
    assert c.dy is not None and c.dy.max() / c.dy.min() > 2
    ref = equivalence.reference("earth_like_dy")
    assert ref.period == pytest.approx(13.1, rel=1e-2)
    assert 1 - ref.depth < 5e-4


def test_narrow_stellar_limits_search_fewer_durations():
    c = case("narrow_stellar_limits")
    assert {c.options[k] for k in ("R_star_min", "M_star_min")} == {0.9}
    assert {c.options[k] for k in ("R_star_max", "M_star_max")} == {1.1}

    def durations_searched(**options):
        plan, periods = backends.make_plan(c.t, c.y, c.dy, **options)
        lo, hi = plan.width_windows(periods)
        return int(np.sum(hi - lo))

    assert durations_searched(**c.options) < durations_searched() / 2


def test_centred_time_straddles_zero_without_dy():
    c = case("centred_time")
    assert c.dy is None
    assert c.t.min() < 0 < c.t.max() and abs(c.t.mean()) < 0.02 * np.ptp(c.t)
    assert equivalence.reference("centred_time").T0 < 0


def test_short_light_curve_gets_tls_fallback_grid():
    """Under 100 periods at 2.5 d: TLS searches a 5-day span's grid instead, so
    periods reach past half the light curve (up to 2.5 d)."""
    c = case("short_light_curve")
    ref = equivalence.reference("short_light_curve")
    assert np.ptp(c.t) < 2.5
    assert ref.periods.max() == pytest.approx(2.5) and ref.periods.max() > np.ptp(c.t) / 2
    assert ref.period == pytest.approx(0.9, rel=1e-2)


def test_box_template_case_asks_for_the_box():
    assert case("box_template").options == {"transit_template": "box"}
    assert equivalence.reference("box_template").SDE > 7


# ---- TLS's no-fit behaviour (its issues #102 / #110) -----------------------------------------

def test_no_fit_case_has_only_brightenings():
    c = case("no_fit")
    assert np.all(c.y >= 1.0)


@pytest.mark.parametrize("backend", ["fused", "bench-cpu"])
def test_no_fit_pins_tls_flat_chi2(backend):
    """TLS 2.0.4 with nothing to fit: the warning, every chi2 the flat-model chi2
    (1.x used the number of points), zero power, period NaN, SDE 0."""
    from backends import tls_power

    c = case("no_fit")
    with pytest.warns(UserWarning, match=equivalence.NO_FIT_WARNING):
        r = tls_power.power(c.t, c.y, c.dy, backend=backend)
    flat = np.sum((c.y - 1.0) ** 2 / (c.dy / c.dy.mean()) ** 2)
    np.testing.assert_allclose(r.chi2, flat, rtol=1e-12)
    assert r.chi2_min == r.chi2.min() and not np.isclose(flat, c.t.size)
    assert not r.power.any() and not r.power_raw.any()
    assert math.isnan(r.period) and math.isnan(r.duration) and math.isnan(r.snr) and math.isnan(r.FAP)
    assert (r.SDE, r.SDE_raw, r.SR, r.T0, r.depth, r.period_uncertainty) == (0, 0, 0, 0, 1, math.inf)


# ---- classification ---------------------------------------------------------------------

def test_cpu_is_exact_on_all_seven():
    """The main assertion, and ``cpu``'s flag agrees with it."""
    cpu_classes = equivalence.classify("cpu")
    assert {name: c.verdict for name, c in cpu_classes.items()} == dict.fromkeys(KINDS, "exact")
    assert equivalence.overall(cpu_classes) == "exact"
    assert backends.registry.backend_class("cpu").exact


@pytest.mark.parametrize("factor, verdict", [(1 + 1e-6, "approximate"), (1 + 1e-2, "fail")])
def test_perturbed_chi2_is_caught(factor, verdict):
    found = equivalence.classify(scaled(factor)())
    assert {c.verdict for c in found.values()} == {verdict}
    assert all(c.chi2 == pytest.approx(factor - 1, rel=1e-6) for c in found.values())
    assert equivalence.overall(found) == verdict


def _comparison(verdict):
    chi2 = {"exact": 0.0, "approximate": 1e-6, "fail": 1e-2}[verdict]
    return contract.Comparison(chi2=chi2, stats={"SDE": 0.0}, sde=(10.0, 10.0))


@pytest.mark.parametrize("verdicts, expected", [
    (("exact", "exact"), "exact"),
    (("exact", "approximate"), "approximate"),
    (("approximate", "fail", "exact"), "fail"),
])
def test_overall_is_the_worst_case(verdicts, expected):
    assert equivalence.overall({str(i): _comparison(v) for i, v in enumerate(verdicts)}) == expected


@pytest.mark.parametrize("declared_exact, verdict, problem", [
    (True, "exact", None),
    (True, "approximate", "declared exact but approximate"),
    (True, "fail", "declared exact but fail"),
    (False, "exact", None),
    (False, "approximate", None),
    (False, "fail", "declared approximate but fails the approximate bar"),
])
def test_misdeclared(declared_exact, verdict, problem):
    assert equivalence.misdeclared(declared_exact, verdict) == problem


def _flag_cases():
    for name in backends.backend_names():
        if name == "cpu":  # test_cpu_is_exact_on_all_seven
            continue
        cls = backends.registry.backend_class(name)
        marks = [requires_gpu] if cls.device == "gpu" else [pytest.mark.slow] if name == "reference" else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", _flag_cases())
def test_classification_agrees_with_exact_flag(name):
    why = backends.available_backends()[name]
    if why is not None:
        pytest.skip(f"{name}: {why}")
    found = equivalence.classify(name)
    verdict = equivalence.overall(found)
    assert (verdict == "exact") == backends.registry.backend_class(name).exact, \
        {case: c.worst() for case, c in found.items() if c.verdict != "exact"}
    assert verdict != "fail"


# ---- the flag TLS's registry sees -------------------------------------------------------

@pytest.fixture
def registered_approximate():
    backends.register_backend("scaled-chi2", scaled(1 + 1e-6))
    yield "scaled-chi2"
    backends.unregister_backend("scaled-chi2")


def _tls_flag_cases():
    for name in backends.backend_names():
        gpu = backends.registry.backend_class(name).device == "gpu"
        yield pytest.param(name, marks=[requires_gpu] if gpu else [], id=name)


@pytest.mark.parametrize("name", _tls_flag_cases())
def test_tls_registry_sees_the_exact_flag(name):
    from transitleastsquares.backends import get_backend as tls_get

    if backends.available_backends()[name] is not None:
        pytest.skip(backends.available_backends()[name])
    assert tls_get(f"bench-{name}").exact is backends.registry.backend_class(name).exact


def test_tls_registry_sees_an_approximate_flag(registered_approximate):
    """TLS pre-bins short cadences only for backends whose flag says approximate."""
    from transitleastsquares.backends import get_backend as tls_get

    assert tls_get(f"bench-{registered_approximate}").exact is False


# ---- the command ------------------------------------------------------------------------

def test_cli_writes_table_and_csv(monkeypatch, tmp_path):
    import pandas as pd

    monkeypatch.setattr(equivalence, "classify", lambda name: dict.fromkeys(KINDS, _comparison("exact")))
    assert equivalence.main(["--backends", "cpu", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "equivalence" / "equivalence.csv")
    assert list(table["case"]) == list(KINDS) and set(table["verdict"]) == {"exact"}
    assert list(table.columns[:5]) == ["backend", "declared_exact", "case", "verdict", "chi2_rel"]
    assert {"SDE_rel", "SDE", "SDE_fused"} <= set(table.columns)
    text = (tmp_path / "equivalence" / "equivalence.md").read_text()
    assert "| `cpu` | exact | exact | exact | exact | exact | exact | exact | exact | exact | yes |" in text
    assert f"- `no_fit`: {case('no_fit').what}" in text


@pytest.mark.parametrize("declared_exact, verdict, status", [
    (True, "approximate", 1),
    (False, "approximate", 0),
    (False, "fail", 1),
])
def test_cli_exit_status_follows_the_declaration(monkeypatch, tmp_path, capsys, declared_exact, verdict, status):
    monkeypatch.setattr(equivalence, "classify", lambda name: dict.fromkeys(KINDS, _comparison(verdict)))
    backends.register_backend("scaled-chi2", scaled(1.0, exact=declared_exact))
    try:
        assert equivalence.main(["--backends", "scaled-chi2", "--out", str(tmp_path)]) == status
    finally:
        backends.unregister_backend("scaled-chi2")
    assert ("scaled-chi2: declared" in capsys.readouterr().err) == bool(status)


def test_cli_writes_outside_the_tree_by_default(monkeypatch, tmp_path):
    monkeypatch.setenv("TLS_WORKBENCH_OUT", str(tmp_path))
    monkeypatch.setattr(equivalence, "classify", lambda name: dict.fromkeys(KINDS, _comparison("exact")))
    assert equivalence.main(["--backends", "cpu"]) == 0
    assert sorted(p.name for p in (tmp_path / "equivalence").iterdir()) == ["equivalence.csv", "equivalence.md"]
