"""Bad input gets a clear error or a documented, counted cleaning step."""

import re
import warnings

import numpy as np
import pytest

import backends
from tests.conftest import box_light_curve


def _search(t, y, dy=None, **kw):
    return backends.search(t, y, dy, backend="cpu", **kw)


def test_nan_and_inf_rows_are_dropped_and_counted(small_lc):
    t, y, dy = (a.copy() for a in small_lc)
    y[5], t[9], dy[20] = np.nan, np.inf, np.nan
    with pytest.warns(UserWarning, match="dropped 3 of"):
        r = _search(t, y, dy)
    assert r.meta["cleaning"]["dropped_nonfinite"] == 3
    assert r.meta["cleaning"]["rows_searched"] == t.size - 3


def test_nonpositive_flux_rows_are_dropped_and_counted(small_lc):
    t, y, dy = (a.copy() for a in small_lc)
    y[3] = 0.0
    with pytest.warns(UserWarning, match="flux <= 0"):
        r = _search(t, y, dy)
    assert r.meta["cleaning"]["dropped_nonpositive_flux"] == 1


@pytest.mark.parametrize("bad", [0.0, -1e-3])
def test_nonpositive_errors_are_rejected(small_lc, bad):
    t, y, dy = (a.copy() for a in small_lc)
    dy[7] = bad
    with pytest.raises(ValueError, match="errors must be positive"):
        _search(t, y, dy)


def test_all_nan_errors_mean_no_errors(small_lc):
    t, y, _ = small_lc
    r = _search(t, y, np.full(t.size, np.nan))
    assert r.meta["cleaning"]["dy_given"] is False


def test_too_few_points():
    with pytest.raises(ValueError, match="at least 3"):
        _search([1.0, 2.0, np.nan], [1.0, 1.0, 1.0])


def test_baseline_too_short_for_two_transits():
    t, y, dy = box_light_curve(days=1.0)
    with pytest.raises(ValueError, match="too short for 2 transits"):
        _search(t, y, dy)


def test_mismatched_lengths(small_lc):
    t, y, dy = small_lc
    with pytest.raises(ValueError, match="same length"):
        _search(t, y[:-1], dy)


def test_two_dimensional_input(small_lc):
    t, y, dy = small_lc
    with pytest.raises(ValueError, match="must be 1-D"):
        _search(t, np.stack([y, y]), dy)


def test_duplicate_times(small_lc):
    t, y, dy = (a.copy() for a in small_lc)
    t[10] = t[9]
    with pytest.raises(ValueError, match="duplicate time stamps"):
        _search(t, y, dy)


def test_unnormalised_flux_warns_with_advice(small_lc):
    t, y, dy = small_lc
    with pytest.warns(UserWarning, match="normalised to 1"):
        _search(t, y * 1000.0, dy * 1000.0)


def test_unsorted_times_are_sorted_without_changing_the_result(small_lc):
    t, y, dy = small_lc
    order = np.random.default_rng(0).permutation(t.size)
    a = _search(t, y, dy)
    b = _search(t[order], y[order], dy[order])
    assert b.meta["cleaning"]["reordered"]
    np.testing.assert_array_equal(a.chi2, b.chi2)
    assert a.period == b.period


def test_unknown_options_are_errors_naming_the_nearest(small_lc):
    from backends.tls_power import power

    with pytest.raises(ValueError, match="unknown power.. option 'perod_max': did you mean 'period_max'"):
        _search(*small_lc, perod_max=6.0)
    with pytest.raises(ValueError, match="did you mean 'oversampling_factor'"):
        power(*small_lc, oversampling=2)


@pytest.mark.parametrize("options", [{}, {"period_min": 2.0, "period_max": 10.0}, {"period_max": 3.0},
                                     {"oversampling_factor": 5, "R_star": 0.5, "M_star": 0.4},
                                     {"n_transits_min": 3, "period_min": 2.0}])
@pytest.mark.parametrize("span", [27.0, 90.0, 1000.0])
def test_search_size_counts_tls_grid_without_building_it(span, options):
    from backends import grids, search_size

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TLS's small-grid warning
        tls = grids.period_grid(span, **options)
    size = search_size.estimate(span, 1000, **options)
    assert size.periods == tls.size and size.work == 1000 * tls.size
    assert size.grid >= size.periods


def _refused_before_tls_builds_a_grid(monkeypatch, t, y, dy, match):
    """The ValueError of backends.search (and search_batch's error) for a search
    over the size limits, raised before TLS's period grid is built."""
    import transitleastsquares.grid
    import transitleastsquares.main

    def no_grid(*args, **kwargs):
        raise AssertionError("TLS's period grid was built")

    for module in (transitleastsquares.main, transitleastsquares.grid):
        monkeypatch.setattr(module, "period_grid", no_grid)
    with pytest.raises(ValueError, match=match) as error:
        _search(t, y, dy)
    outcome = backends.search_batch([(t, y, dy)], backend="cpu")[0]
    assert isinstance(outcome, backends.BatchError) and re.search(match, outcome.message)
    return str(error.value)


def test_times_in_seconds_are_refused_before_any_grid(monkeypatch):
    t, y, dy = box_light_curve(days=90.0)
    message = _refused_before_tls_builds_a_grid(monkeypatch, t * 86400.0, y, dy, "seconds")
    assert "search too large" in message and "GB" in message and "trial periods x 4,320 points" in message


def test_gaps_are_named_and_the_limits_are_configurable(monkeypatch, small_lc):
    t, y, dy = box_light_curve(days=20.0)
    far = np.concatenate([t, t + 3000.0])
    monkeypatch.setenv("TLS_WORKBENCH_MAX_WORK", "1e8")
    message = _refused_before_tls_builds_a_grid(monkeypatch, far, np.tile(y, 2), np.tile(dy, 2),
                                                "gaps included")
    assert "cover 1%" in message and "limit 1e+08, TLS_WORKBENCH_MAX_WORK" in message
    monkeypatch.setenv("TLS_WORKBENCH_MAX_WORK", "1e3")
    with pytest.raises(ValueError, match="set period_max"):  # no gaps, no unit mistake: just long
        _search(*small_lc)
    monkeypatch.setenv("TLS_WORKBENCH_MAX_WORK", "lots")
    with pytest.raises(ValueError, match="TLS_WORKBENCH_MAX_WORK='lots' is not a number"):
        _search(*small_lc)
