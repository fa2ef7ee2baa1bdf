"""datasets: the synthetic generator, the shipped real light curves, detrending."""

import csv
import math

import numpy as np
import pytest

from datasets import PRESETS, REAL_NAMES, bin_lightcurve, flatten, load, planets, simulate
from datasets import detrend, real, synthetic


def small(**kw):
    return simulate(seed=kw.pop("seed", 1), preset="k2", baseline=kw.pop("baseline", 20.0), **kw)


def test_simulate_is_seeded():
    a, b, c = small(seed=3), small(seed=3), small(seed=4)
    assert np.array_equal(a.y, b.y) and a.truth == b.truth
    assert not np.array_equal(a.y, c.y)


def test_requested_depth_and_snr_are_met():
    lc = small(depth_ppm=3000.0, period=3.0, t0=1.0)
    assert lc.truth["depth_ppm"] == pytest.approx(3000.0, rel=1e-6)
    assert lc.truth["period"] == 3.0 and lc.truth["t0"] == pytest.approx(1.0)
    assert lc.truth["n_transits"] >= 6
    lc = small(snr=12.0, period=4.0, b=0.4)
    assert lc.truth["snr"] == pytest.approx(12.0, rel=0.1)


def test_transit_is_where_the_truth_says():
    lc = simulate(seed=2, preset="k2", baseline=20.0, noise_ppm=1.0, depth_ppm=5000.0,
                  period=5.0, t0=2.0, b=0.0)
    inside = np.abs((lc.t - 2.0 + 2.5) % 5.0 - 2.5) < 0.3 * lc.truth["duration"]
    assert np.all(lc.y[inside] < 1 - 0.003) and np.all(np.abs(lc.y[~inside] - 1) < 0.0051)
    assert 0.1 < lc.truth["duration"] < 0.2  # T14 of a Sun-like star at 5 d


def test_grazing_transit():
    lc = small(b=1.0, depth_ppm=2000.0, period=3.0)
    assert lc.truth["b"] > 1 - lc.truth["rp_rs"]  # grazing geometry
    assert lc.truth["depth_ppm"] == pytest.approx(2000.0, rel=1e-6)
    assert lc.truth["rp_rs"] ** 2 > 2000e-6  # a grazing planet is larger than its depth says


def test_noise_only_curve():
    lc = small(snr=0, noise_ppm=300.0)
    assert math.isnan(lc.truth["period"]) and lc.truth["snr"] == 0
    assert np.std(lc.y) == pytest.approx(300e-6, rel=0.15)
    assert np.all(lc.dy == 300e-6)


def test_presets_and_gaps():
    assert PRESETS["k2"].cadence_min == 29.4 and PRESETS["k2"].baseline == 90.0
    assert PRESETS["tess"].cadence_min == 2.0 and PRESETS["tess"].baseline == 27.0
    t = synthetic.time_grid(10.0, 30.0, gaps=((0.5, 1.0),))
    assert not np.any((t >= 5.0) & (t < 6.0))
    assert np.median(np.diff(t)) == pytest.approx(30 / 1440)


def test_thinning_to_ndata():
    lc = small(ndata=300)
    assert lc.t.size == 300 and np.all(np.diff(lc.t) > 0)
    with pytest.raises(ValueError, match="exceeds"):
        small(ndata=10**6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(snr=5.0, depth_ppm=100.0), "at most one"),
    (dict(preset="nope"), "unknown preset"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simulate(seed=0, baseline=kwargs.pop("baseline", 10.0), **kwargs)


def test_unreachable_depth_and_missing_transit():
    with pytest.raises(synthetic.DepthOutOfReach, match="out of reach"):
        synthetic.rp_for_depth(0.2, b=1.2)
    t = np.linspace(0.0, 1.0, 100)
    with pytest.raises(synthetic.NoTransitInData, match="falls in no data point"):
        synthetic.injection_for(t, 1e-3, period=10.0, t0=5.0, snr=10.0)
    with pytest.raises(ValueError, match="exactly one"):
        synthetic.injection_for(t, 1e-3, period=10.0, t0=5.0)
    with pytest.raises(ValueError, match="impact parameter"):
        synthetic.transit_model(t, synthetic.Injection(period=1.0, t0=0.5, rp_rs=0.1, b=5.0))


def test_expected_snr():
    t = np.arange(100.0)
    model = np.ones(100)
    model[:4] = 0.99
    assert synthetic.expected_snr(t, model, 0.01) == pytest.approx(2.0)
    assert synthetic.expected_snr(t, np.ones(100), 0.01) == 0.0


def test_red_noise_is_stationary_ar1_through_gaps():
    t = synthetic.time_grid(200.0, 30.0, gaps=((0.5, 3.0),))
    x = synthetic.red_noise(t, 30.0, tau=0.1, sigma=2e-3, rng=np.random.default_rng(0))
    again = synthetic.red_noise(t, 30.0, tau=0.1, sigma=2e-3, rng=np.random.default_rng(0))
    assert np.array_equal(x, again) and x.size == t.size
    assert np.std(x) == pytest.approx(2e-3, rel=0.05)
    neighbours = np.isclose(np.diff(t), 30 / 1440)
    lag1 = np.corrcoef(x[:-1][neighbours], x[1:][neighbours])[0, 1]
    assert lag1 == pytest.approx(math.exp(-30 / 1440 / 0.1), abs=0.02)


def test_an_injection_with_a_stellar_density_lasts_accordingly():
    t = np.arange(0.0, 20.0, 2 / 1440)
    sun = synthetic.Injection(period=5.0, t0=1.0, rp_rs=0.0).a
    short = synthetic.injection_for(t, 1e-3, 5.0, 1.0, snr=10.0, a_rs=2 * sun)
    normal = synthetic.injection_for(t, 1e-3, 5.0, 1.0, snr=10.0)
    assert short.a_rs == 2 * sun and short.duration == pytest.approx(normal.duration / 2, rel=0.02)


def test_noise_windows_of_a_real_curve():
    name = "WASP-126_TESS_S01_alert"
    windows = [real.noise_window(name, 10.0, np.random.default_rng(k)) for k in range(4)]
    planet = planets(name)[0]
    for t, y, dy in windows:
        assert np.ptp(t) < 10.0 and np.all(np.diff(t) > 0) and y.size == dy.size == t.size > 4000
        assert not real.in_transit(t, planet).any()  # masked: no known transit left
    assert len({float(w[1][0]) for w in windows}) == 4  # other starts, shifts or reversals
    noise = real.load(name, mask_planets=True)
    assert np.isin(windows[0][1], noise.y).all()  # its own flux values, rearranged
    t, y, _ = real.noise_window("WASP-75_K2_C03_everest", 60.0, np.random.default_rng(0))
    assert np.abs(y - np.median(y)).max() < real.OUTLIER_SIGMA * 1.1 * detrend.robust_sigma(y)
    t, y, _ = real.noise_window(name, 100.0, np.random.default_rng(0), bin_minutes=10.0)
    assert np.median(np.diff(t)) == pytest.approx(10 / 1440, rel=0.01)  # longer than the curve: all


def test_flatten_removes_trend_keeps_transit():
    t = np.arange(0, 20, 30 / 1440)
    y = 1 + 0.01 * np.sin(2 * np.pi * t / 5)
    dip = np.abs(t - 10) < 0.05
    y[dip] *= 0.99
    flat, _ = flatten(t, y, window=0.75)
    assert np.std(flat[~dip]) < 5e-4
    assert np.median(flat[dip]) == pytest.approx(0.99, abs=2e-3)
    with pytest.raises(ValueError, match="positive"):
        detrend.trend(t, y, 0)


def test_trend_does_not_bridge_gaps():
    t = np.r_[np.arange(0, 5, 0.02), np.arange(8, 13, 0.02)]
    y = np.where(t < 6, 1.0, 1.1)
    assert detrend.segments(t, 0.5) == [(0, 250), (250, 500)]
    assert np.allclose(y / detrend.trend(t, y, 1.0), 1.0)


def test_binning():
    t = np.arange(0, 1, 1 / 1440)
    y = np.ones_like(t)
    dy = np.full_like(t, 1e-3)
    tb, yb, dyb = bin_lightcurve(t, y, dy, 10 / 1440)
    assert tb.size == 144 and np.allclose(yb, 1)
    assert np.allclose(dyb, 1e-3 / math.sqrt(10))
    assert bin_lightcurve(t, y, None, 10 / 1440)[2] is None
    with pytest.raises(ValueError, match="positive"):
        bin_lightcurve(t, y, dy, 0)


@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_light_curves_load(name):
    lc = load(name)
    assert lc.t.size == lc.y.size == lc.dy.size > 2000
    assert np.all(np.diff(lc.t) > 0) and np.all(np.isfinite(lc.y))
    assert 0.999 < np.median(lc.y) < 1.001
    assert lc.planets and all(p.period > 0 and p.duration > 0 for p in lc.planets)
    assert ("running median" in " ".join(lc.steps)) == (not real.is_detrended(lc.meta))
    # every known planet has data at its first listed transit
    for p in lc.planets:
        assert real.in_transit(lc.t, p).any()


def test_real_options_and_errors():
    full = load("WASP-75_K2_C03_everest")
    masked = load("WASP-75_K2_C03_everest", mask_planets=True)
    assert masked.t.size < full.t.size and not real.in_transit(masked.t, full.planets[0], 1.0).any()
    binned = load("WASP-18_TESS_S02_flat", bin_minutes=10)
    assert 3500 < binned.t.size < 4000 and binned.cadence_min == pytest.approx(10, rel=0.05)
    raw = load("WASP-75_K2_C03_everest", detrend=False)
    assert raw.steps == () and np.std(raw.y) > np.std(full.y)
    with pytest.raises(ValueError, match="unknown light curve"):
        load("Kepler-1b")
    assert [p.name for p in planets("K2-3_K2_C01_everest")] == ["K2-3 b", "K2-3 c", "K2-3 d"]


def test_shipped_files_have_attribution():
    with open(real.DATA / "MANIFEST.csv") as f:
        rows = list(csv.DictReader(f))
    assert {r["file"][:-4] for r in rows} == set(REAL_NAMES)
    assert all(r["license"] and r["source_repo"] and r["source_commit"] for r in rows)
    readme = (real.DATA / "README.md").read_text()
    assert all(name in readme for name in REAL_NAMES)
