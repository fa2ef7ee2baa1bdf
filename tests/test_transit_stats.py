"""``backends.transit_stats``: numpy's summation to the bit, and TLS's
per-transit statistics (``intransit_stats``, ``snr_stats``, ``count_stats``)
to the bit, every transit at once."""

import numpy as np
import pytest
from transitleastsquares import stats as tls
from transitleastsquares.helpers import transit_mask

from backends import transit_stats


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e6])
def test_numpy_sum_is_numpys_to_the_bit(scale):
    rng = np.random.default_rng(int(scale * 7) % 1000)
    for n in [*range(0, 300), 1000, 4097, 8192, 8193, 20011]:
        a = 1.0 + scale * rng.standard_normal(n)
        assert transit_stats.numpy_sum(a) == np.sum(a), n
    assert str(transit_stats.numpy_sum(np.array([-0.0]))) == "-0.0"  # numpy keeps -0.0


def light_curve(seed, period=3.1, t0=0.7, duration=0.15, gap=(10.5, 13.5)):
    """Sorted times with a gap (empty transits), flux with box transits."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 30.0, 6000))
    t = t[(t < gap[0]) | (t > gap[1])]
    y = 1.0 + rng.normal(0.0, 5e-4, t.size)
    y[transit_mask(t, period, duration, t0)] -= 1e-3
    return t, y, tls.all_transit_times(t0, t, period), duration


def same(got, want):
    if isinstance(want, (tuple, list)):
        return len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    return np.array_equal(np.asarray(got), np.asarray(want), equal_nan=True)


@pytest.mark.parametrize("seed", range(5))
def test_per_transit_statistics_are_tls_to_the_bit(seed):
    t, y, times, duration = light_curve(seed, duration=0.05 + 0.05 * seed)
    period, T0 = 3.1, times[0]
    inside = transit_stats.intransit_stats(t, y, times, duration)
    assert same(inside, tls.intransit_stats(t, y, times, duration))
    assert 0 in inside[6]  # a transit in the gap: TLS's NaN depth, its count 0
    flux_ootr = y[~transit_mask(t, period, 2 * duration, T0)]
    assert same(transit_stats.snr_stats(flux_ootr, inside[6], inside[7]),
                tls.snr_stats(t=t, y=y, period=period, duration=duration, T0=T0, transit_times=times,
                              transit_duration_in_days=duration, per_transit_count=inside[6]))
    assert same(transit_stats.count_stats(t, times, duration), tls.count_stats(t, y, times, duration))


def test_out_of_transit_is_tls_masks_to_the_bit():
    rng = np.random.default_rng(3)
    t = np.concatenate([rng.uniform(-1e4, 1e4, 20000), np.arange(0.0, 30.0, 0.02), [np.nan, np.inf]])
    y = rng.normal(1.0, 1e-3, t.size)
    for period, duration, T0 in [(3.1, 0.1, 0.7), (0.51, 0.02, -0.3), (33.3, 1.0, 1e3), (1.0, 0.5, 0.25)]:
        with np.errstate(invalid="ignore"):  # inf % period
            want = y[~transit_mask(t, period, duration, T0)]
        assert same(transit_stats.out_of_transit(t, y, period, duration, T0), want)


def test_no_point_in_any_transit_is_tls_too():
    t, y, times, _ = light_curve(0)
    duration = 1e-9  # narrower than the cadence: every transit empty
    inside = transit_stats.intransit_stats(t, y, times, duration)
    assert same(inside, tls.intransit_stats(t, y, times, duration))
    assert not inside[6].any() and np.isnan(inside[0]) and np.isnan(inside[1])
    flux_ootr = y[~transit_mask(t, 3.1, 2 * duration, times[0])]
    assert same(transit_stats.snr_stats(flux_ootr, inside[6], inside[7]),
                tls.snr_stats(t=t, y=y, period=3.1, duration=duration, T0=times[0], transit_times=times,
                              transit_duration_in_days=duration, per_transit_count=inside[6]))


def test_any_count_of_transits_takes_one_compiled_gather():
    """Two transits made one-element (contiguous) slices, more made strided
    ones: numba compiled each layout apart, ~0.5 s in the middle of a survey."""
    t, y, times, duration = light_curve(1)
    for count in (1, 2, 3, len(times)):
        inside = transit_stats.intransit_stats(t, y, times[:count], duration)
        assert same(inside, tls.intransit_stats(t, y, times[:count], duration))
    assert len(transit_stats._gathered.signatures) == 1
