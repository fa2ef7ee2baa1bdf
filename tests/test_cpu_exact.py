"""The ``cpu`` backend reproduces TLS 2.0.4's exact statistic: against TLS's own
``core.search_period`` (``reference``) and ``power(backend="fused")``."""

import numpy as np
import pytest

import backends
from backends.contract import assert_exact
from backends.tls_power import power
from tests.conftest import box_light_curve


def test_cpu_matches_search_period_per_period(small_plan):
    plan, periods = small_plan
    subset = periods[:: max(1, periods.size // 120)]
    ref = backends.get_backend("reference").search(plan, subset)
    cpu = backends.get_backend("cpu").search(plan, subset)
    assert_exact(cpu, ref, "cpu vs search_period")
    np.testing.assert_array_equal(cpu.rows, ref.rows)
    np.testing.assert_allclose(cpu.depths, ref.depths, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "case",
    [
        dict(),  # varying errors
        dict(dy=None, seed=3),  # no errors: TLS uses std(y) for every point
        dict(dy="constant", seed=4, depth=6e-4),
        dict(epoch=3000.0, seed=5),  # BKJD/BTJD-like absolute times
        dict(depth=0.0, seed=6),  # noise only
    ],
    ids=["varying-dy", "no-dy", "constant-dy", "t~3000d", "noise-only"],
)
def test_power_through_tls_matches_fused(case):
    t, y, dy = box_light_curve(**case)
    fused = power(t, y, dy, backend="fused", use_threads=2)
    ours = power(t, y, dy, backend="bench-cpu", use_threads=2)
    assert_exact(ours, fused, "cpu through TLS's power()")


def test_flat_fallback_when_nothing_passes_depth_filter():
    """Only brightenings, so no box is deeper than transit_depth_min: every
    period keeps the flat chi2, row 0 and depth 0 (TLS 2.0)."""
    t, y, dy = box_light_curve(depth=0.0, seed=9)
    plan, periods = backends.make_plan(t, 1.0 + np.abs(y - 1.0), dy)
    stats = backends.get_backend("cpu").search(plan, periods[:50])
    np.testing.assert_array_equal(stats.chi2, plan.lc.chi2_flat)
    assert not stats.rows.any() and not stats.depths.any()


def test_phase_ties_sort_as_in_tls():
    """At P = span / 2 the first and last samples fold to the same phase in
    exact arithmetic; the fold must round as TLS's fastmath fold does, or the
    order (and chi2, here by ~1e-5) differs from TLS."""
    import datasets

    lc = datasets.simulate(seed=0, preset="k2", start=3000.0)
    t = lc.t
    plan, periods = backends.make_plan(lc.t, lc.y, lc.dy)
    longest = periods[:1]
    assert longest[0] == pytest.approx((t[-1] - t[0]) / 2, rel=1e-12)
    ref = backends.get_backend("reference").search(plan, longest)
    cpu = backends.get_backend("cpu").search(plan, longest)
    np.testing.assert_allclose(cpu.chi2, ref.chi2, rtol=1e-12)


@pytest.mark.parametrize("kind", ["random", "regular", "crowded", "ties"])
def test_phase_order_is_a_stable_sort(kind):
    """The cpu backend's bucket sort gives numpy's stable mergesort order of
    the phases, also when buckets overflow and with equal phases (period 1:
    the phases are the times)."""
    from backends.implementations.cpu import phase_order, tls_fused

    rng = np.random.default_rng(1)
    n = 2000
    t = {"random": rng.random(n),
         "regular": (np.arange(n) * 0.377) % 1.0,
         "crowded": np.round(rng.random(n) * 7) / 7 * 0.999,
         "ties": np.repeat(rng.random(n // 4), 4)}[kind]
    order = np.empty(n, np.int64)
    phase_order(t, 1.0, tls_fused.walk_disabled(np.int64), np.empty(n), order,
                np.empty(n + 1, np.int64))
    np.testing.assert_array_equal(order, np.argsort(t, kind="mergesort"))


def test_walk_fold_is_the_stable_order():
    """On a regular cadence with gaps, the three-gap walk gives the same order
    as the bucket sort (numpy's stable mergesort of the phases)."""
    from backends.implementations.cpu import cadence_walk, phase_order

    t = 3000.0 + np.delete(np.arange(3000), np.s_[1000:1200]) / 48.0
    walk = cadence_walk(t)
    assert np.isfinite(walk[5])
    n = t.size
    order = np.empty(n, np.int64)
    for period in np.geomspace(max(walk[5], 0.5), 30.0, 40):
        phase_order(t, period, walk, np.empty(n), order, np.empty(n + 1, np.int64))
        x = t * (1.0 / period)
        np.testing.assert_array_equal(order, np.argsort(x - np.floor(x), kind="mergesort"))
