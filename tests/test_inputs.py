"""Bad input gets a clear error or a documented, counted cleaning step."""

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
