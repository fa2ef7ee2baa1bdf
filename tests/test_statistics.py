"""``backends.statistics``: the results of ``search_batch`` (full and lean)
equal transitleastsquares' own ``power()`` results on the conformance set
(``validation.equivalence``'s seven cases and a K2-like light curve), given
the same per-period statistics."""

import warnings

import numpy as np
import pytest
from transitleastsquares.backends import SearchBackend, SearchResult
from transitleastsquares.results import RESULT_KEYS

import backends
from backends import inputs, statistics, transit_stats
from backends.tls_power import power
from datasets import synthetic
from validation import equivalence


class Replay(SearchBackend):
    """A TLS backend that hands power() per-period statistics found beforehand
    (in whatever order TLS asks for the periods)."""

    name = "replay"

    def __init__(self, found):
        self.found = found

    def search(self, problem, periods, use_threads=1, progress=None):
        at = np.searchsorted(self.found.periods, periods)
        return SearchResult.from_unsorted(periods, self.found.chi2[at], self.found.rows[at],
                                          self.found.depths[at])


def conformance_set():
    cases = [(c.name, c.t, c.y, c.dy, c.options) for c in equivalence.cases()]
    k2 = synthetic.simulate(seed=3, preset="k2", start=3000.0)
    return cases + [("k2_like", k2.t, k2.y, k2.dy, {}), ("k2_like_hybrid_sde", k2.t, k2.y, k2.dy,
                                                            {"SDE_detrend": "hybrid"})]


CASES = {name: case for name, *case in conformance_set()}


@pytest.fixture(scope="module", params=sorted(CASES))
def searched(request):
    """(plan, the cpu backend's statistics, TLS's power() from them) of a case."""
    t, y, dy, options = CASES[request.param]
    lc = inputs.clean(t, y, dy)
    plan, periods = backends.make_plan(lc.t, lc.y, lc.dy, **options)
    stats = backends.get_backend("cpu").search(plan, periods)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=equivalence.NO_FIT_WARNING)
        reference = power(lc.t, lc.y, lc.dy, backend=Replay(statistics.sorted_by_period(plan.model.grid, stats)),
                          **options)
    return plan, stats, reference


def assert_same(got, want, key):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want), key
        for g, w in zip(got, want):
            assert_same(g, w, key)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, key
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True, err_msg=key)
    else:
        np.testing.assert_array_equal(got, want, err_msg=key)


@pytest.mark.parametrize("lean", [False, True], ids=["full", "lean"])
def test_results_equal_tls_power(searched, lean):
    plan, stats, reference = searched
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=equivalence.NO_FIT_WARNING)
        got = statistics.tls_results(plan, stats, lean=lean)
    expected = [k for k in RESULT_KEYS if not (lean and k in statistics.FOLDED_KEYS)]
    assert list(got) == expected
    for key in expected:
        assert_same(got[key], reference[key], key)


def test_a_single_search_equals_tls_power(searched, request, monkeypatch):
    """``backends.search`` composes its results as ``search_batch`` does, not through power()."""
    from backends import tls_power

    _, _, reference = searched
    t, y, dy, options = CASES[request.node.callspec.params["searched"]]
    monkeypatch.setattr(tls_power, "planned_power", lambda *a, **k: 1 / 0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=equivalence.NO_FIT_WARNING)
        got = backends.search(t, y, dy, backend="cpu", **options)
    assert list(got)[:-1] == list(RESULT_KEYS) and "meta" in got
    for key in RESULT_KEYS:
        assert_same(got[key], reference[key], key)


def test_unsorted_times_take_tls_own_loops(monkeypatch):
    """A plan made from times out of order (make_plan does not sort): TLS's
    per-transit loops, same values as power()."""
    t, y, dy, options = CASES["k2_window"]
    order = np.random.default_rng(0).permutation(t.size)
    plan, periods = backends.make_plan(t[order], y[order], dy, **options)
    stats = backends.get_backend("cpu").search(plan, periods)
    reference = power(t[order], y[order], dy, backend=Replay(statistics.sorted_by_period(plan.model.grid, stats)),
                      **options)
    monkeypatch.setattr(transit_stats, "intransit_stats", None)  # would fail if called
    got = statistics.tls_results(plan, stats)
    for key in RESULT_KEYS:
        assert_same(got[key], reference[key], key)


def test_a_nan_chi2_takes_tls_own_median(monkeypatch):
    """A power spectrum with NaN: TLS's running median takes its other path; so do we."""
    t, y, dy, options = CASES["k2_window"]
    plan, periods = backends.make_plan(t, y, dy, **options)
    stats = backends.get_backend("cpu").search(plan, periods)
    stats.chi2[7] = np.nan
    reference = power(t, y, dy, backend=Replay(statistics.sorted_by_period(plan.model.grid, stats)), **options)
    monkeypatch.setattr(statistics, "running_median", lambda data, kernel: 1 / 0)  # would fail if called
    got = statistics.tls_results(plan, stats)
    for key in RESULT_KEYS:
        assert_same(got[key], reference[key], key)


def test_no_fit_warns_as_tls_does():
    t, y, dy, options = CASES["no_fit"]
    plan, periods = backends.make_plan(t, y, dy, **options)
    stats = backends.get_backend("cpu").search(plan, periods)
    with pytest.warns(UserWarning, match="No transit were fit"):
        got = statistics.tls_results(plan, stats, lean=True)
    assert np.isnan(got.period) and got.SDE == 0 and not set(statistics.FOLDED_KEYS) & set(got)


def test_statistics_of_another_grid_are_refused():
    t, y, dy, options = CASES["short_light_curve"]
    plan, periods = backends.make_plan(t, y, dy, **options)
    stats = backends.get_backend("cpu").search(plan, periods[1:])
    with pytest.raises(ValueError, match=f"{periods.size - 1} per-period results for a grid of {periods.size}"):
        statistics.tls_results(plan, stats)


def test_reference_transits_are_tls_own_built_once_per_samples_and_template(monkeypatch):
    from transitleastsquares.transit import reference_transit

    template = dict(per=12.9, rp=0.03, a=23.1, inc=89.0, ecc=0.0, w=90.0, u=[0.48, 0.19], limb_dark="quadratic")
    monkeypatch.setattr(statistics, "REFERENCE_TRANSITS", statistics.BoundedCache(maxsize=4))
    first = statistics.reference_flux(2160, template)
    np.testing.assert_array_equal(first, reference_transit(samples=2160, **template))
    assert statistics.reference_flux(2160, dict(template, u=(0.48, 0.19))) is first  # u as a list or a tuple
    assert not first.flags.writeable  # every results object shares it
    other = statistics.reference_flux(2160, dict(template, u=[0.3, 0.2]))
    assert other is not first and not np.array_equal(other, first)
    assert statistics.reference_flux(4320, template).size == 4320
    assert statistics.REFERENCE_TRANSITS.builds == 3
    big = statistics.REFERENCE_MAX_SAMPLES + 1
    assert statistics.reference_flux(big, template).flags.writeable  # built, not kept
    assert statistics.REFERENCE_TRANSITS.builds == 3
