"""``backends.t0_fit``: TLS's final T0 fit (``stats.final_T0_fit``) to the bit,
on seeded synthetic light curves with TLS's own templates and on edge cases."""

import numpy as np
import pytest
from transitleastsquares import stats as tls

import backends
from backends import t0_fit
from datasets import synthetic


def assert_tls_t0(signal, depth, t, y, dy, period, margin):
    got = t0_fit.final_T0_fit(signal, depth, t, y, dy, period, margin)
    want = tls.final_T0_fit(signal=signal, depth=depth, t=t, y=y, dy=dy, period=period, T0_fit_margin=margin,
                            show_progress_bar=False, verbose=False)
    assert got == want, (len(signal), period, margin)
    return got


def box_curve(seed, n=1500, days=20.0, period=3.7, t0=0.2, depth=2e-3, duration=0.1):
    """Seeded noisy box transits with varying errors, at random times."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, days, n))
    y = 1.0 + rng.normal(0.0, 5e-4, n)
    y[np.abs(((t - t0) / period + 0.5) % 1.0 - 0.5) * period < duration / 2] -= depth
    return t, y, 5e-4 * (1 + rng.random(n))


def template(dur, depth=0.9):
    """A limb-darkened-looking template of ``dur`` samples: 1 outside, ``depth`` at the centre."""
    x = np.linspace(-1, 1, dur + 2)[1:-1]
    return 1 - (1 - depth) * np.sqrt(1 - x ** 2)


@pytest.mark.parametrize("preset, seed", [*(("k2", seed) for seed in range(6)), ("tess", 6), ("tess", 7)])
def test_every_template_at_several_periods_is_tls_to_the_bit(preset, seed):
    lc = synthetic.simulate(seed=seed, preset=preset, ndata=3000 if preset == "tess" else None, start=3000.0)
    model = backends.make_plan(lc.t, lc.y, lc.dy)[0].model
    depth, P = 1 - lc.truth["depth_ppm"] * 1e-6, lc.truth["period"]
    for period in [P, *np.random.default_rng(seed).uniform(0.6, lc.truth["baseline"] / 3, 2)]:
        for signal in model.cache.lc_arr:  # 7 to 520 samples
            assert_tls_t0(signal, depth, model.t, model.y, model.dy, period, model.T0_fit_margin)
    signal = model.cache.lc_arr[np.argmin(np.abs(model.cache.overview["duration"] - lc.truth["duration"] / P))]
    T0 = assert_tls_t0(signal, depth, model.t, model.y, model.dy, P, model.T0_fit_margin)
    assert abs((T0 - lc.truth["t0"] + P / 2) % P - P / 2) < 0.05  # the injected transit's


@pytest.mark.parametrize("dur", [1, 3, 4, 5, 8, 13, 126])
def test_each_chi2_change_is_summed_in_tls_order(dur):
    """Bit for bit the sequential sum of TLS's terms, so near-equal chi2 compare as in TLS."""
    rng = np.random.default_rng(dur)
    flux, weights = 1 + 1e-3 * rng.standard_normal(300 + dur), 1 / (1e-3 * (1 + rng.random(300 + dur))) ** 2
    signal = template(dur, 0.997)
    change = t0_fit.chi2_changes(flux, weights, signal)
    for g in range(300):
        f, w = flux[g:g + dur], weights[g:g + dur]
        assert change[g] == np.cumsum(((f - signal) ** 2 - (f - 1.0) ** 2) * w)[-1], g


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("margin", [0.0, 0.01, 0.05])
def test_widths_margins_and_the_phase_wrap_are_tls_to_the_bit(seed, margin):
    """Widths of every remainder by the unroll (1 to 9 samples, and long ones),
    all trials (margin 0: many sharing a start), transits at the fold's start."""
    t, y, dy = box_curve(seed, t0=[0.0, 0.2, 3.69, 1.5, 2.0, 3.7][seed])
    for dur in [*range(1, 10), 37, 64, 201]:
        assert_tls_t0(template(dur), 0.998, t, y, dy, 3.7, margin)
    assert_tls_t0(template(30), 0.998, t + 1e4, y, dy, 3.7 + 1e-9 * seed, 0.01)  # large times


def test_few_points_in_transit_and_unsorted_times_are_tls_too():
    t, y, dy = box_curve(7, n=120, duration=0.02)
    for dur in (1, 2, 5, 11):
        assert_tls_t0(template(dur), 0.999, t, y, dy, 3.7, 0.01)
    order = np.random.default_rng(0).permutation(t.size)
    assert_tls_t0(template(5), 0.999, t[order], y[order], dy[order], 3.7, 0.01)


def test_equal_chi2_gives_the_first_trial_as_tls():
    t = np.linspace(0.0, 10.0, 500)
    T0 = assert_tls_t0(template(12), 0.99, t, np.ones(t.size), np.full(t.size, 1e-3), 2.5, 0.01)
    assert T0 == t[0]  # every trial's chi2 the same


def test_few_trials_are_tls_and_none_fails_as_tls():
    t, y, dy = box_curve(8, n=300)
    for margin in (2.0, 5.0, 10.0):  # 15, 6 and 3 trials
        assert_tls_t0(template(10), 0.998, t, y, dy, 3.7, margin)
    with pytest.raises(IndexError):
        tls.final_T0_fit(template(10), 0.998, t, y, dy, 3.7, 100.0, False, False)
    with pytest.raises(IndexError):  # no trial at all
        t0_fit.final_T0_fit(template(10), 0.998, t, y, dy, 3.7, 100.0)
