"""``backends.search``: input types, TLS's results object, ``meta``."""

import numpy as np
import pytest
from transitleastsquares.results import RESULT_KEYS

import backends


def test_results_have_every_tls_key_and_meta(small_lc):
    r = backends.search(*small_lc, backend="cpu")
    assert set(RESULT_KEYS) <= set(r)
    meta = r.meta
    assert meta["backend"] == "cpu" and meta["exact"] is True
    assert meta["versions"]["transitleastsquares"] == "2.0.4"
    assert {"chi2_scan", "duration_grid", "total"} <= set(meta["timings"])
    assert all(v >= 0 for v in meta["timings"].values())
    assert meta["device"].startswith("CPU")


def test_finds_the_injected_period(small_lc):
    r = backends.search(*small_lc, backend="cpu")
    assert r.period == pytest.approx(4.3, rel=0.01)
    assert r.SDE > 9


def test_astropy_quantity_and_time(small_lc):
    pytest.importorskip("astropy")
    import astropy.units as u
    from astropy.time import Time

    t, y, dy = small_lc
    plain = backends.search(t, y, dy, backend="cpu")
    q = backends.search((t * 24.0) * u.hour, y * u.dimensionless_unscaled, dy * u.dimensionless_unscaled,
                        backend="cpu")
    np.testing.assert_allclose(q.chi2, plain.chi2, rtol=1e-12)
    tt = backends.search(Time(t + 2457000.0, format="jd"), y, dy, backend="cpu")
    assert tt.period == pytest.approx(plain.period, rel=1e-9)


def test_lightcurve_like_object(small_lc):
    class LC:  # the attributes lightkurve's LightCurve has
        def __init__(self, t, y, dy):
            self.time, self.flux, self.flux_err = t, y, dy

    t, y, dy = small_lc
    r = backends.search(LC(t, y, dy), backend="cpu")
    assert r.period == backends.search(t, y, dy, backend="cpu").period


def test_tls_options_pass_through(small_lc):
    r = backends.search(*small_lc, backend="cpu", period_min=3.0, period_max=6.0)
    assert r.periods.min() > 3.0 and r.periods.max() <= 6.0


def test_a_lean_search_leaves_out_the_folded_arrays_only(small_lc):
    from backends.statistics import FOLDED_KEYS

    full = backends.search(*small_lc, backend="cpu", period_max=5.0)
    lean = backends.search(*small_lc, backend="cpu", period_max=5.0, lean=True)
    assert set(full) - set(lean) == set(FOLDED_KEYS) and set(lean) <= set(full)
    assert (lean.period, lean.T0, lean.SDE, lean.snr) == (full.period, full.T0, full.SDE, full.snr)


def test_tls_log_and_progress_bar_come_from_tls_power(small_lc, capsys, monkeypatch):
    """verbose and show_progress_bar are TLS's own: such a search runs through power()."""
    from backends import tls_power

    quiet = backends.search(*small_lc, backend="cpu", period_max=5.0)
    assert capsys.readouterr() == ("", "")
    talking = backends.search(*small_lc, backend="cpu", period_max=5.0, verbose=True, show_progress_bar=True)
    out, err = capsys.readouterr()
    assert "Searching 960 data points" in out and f"{quiet.periods.size}/{quiet.periods.size} periods" in err
    assert talking.SDE == quiet.SDE and talking.T0 == quiet.T0
    monkeypatch.setattr(tls_power, "planned_power", lambda *a, **k: 1 / 0)  # a quiet search does not call it
    assert backends.search(*small_lc, backend="cpu", period_max=5.0).SDE == quiet.SDE


def test_an_instance_used_twice_reports_each_search_on_its_own(small_lc):
    backend = backends.get_backend("cpu")
    for _ in range(3):
        last = backends.search(*small_lc, backend=backend)
    stages = last.meta["timings"]
    assert stages["chi2_scan"] <= stages["total"]  # not the three searches' sum


def test_package_versions_are_looked_up_once_per_process(small_lc, monkeypatch):
    """importlib.metadata costs ~8 ms a search; the versions cannot change in a process."""
    from importlib import metadata

    from backends import frontend

    frontend.versions.cache_clear()
    calls = []
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: calls.append(name) or real(name))
    first = backends.search(*small_lc, backend="cpu", period_max=5.0).meta["versions"]
    looked_up = len(calls)
    second = backends.search(*small_lc, backend="cpu", period_max=5.0).meta["versions"]
    assert looked_up > 0 and len(calls) == looked_up and first == second
