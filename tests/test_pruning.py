"""The certified pruning cascade (``backends.pruning``, the ``cpu`` backend):
the same per-period statistic as brute force, bounds that hold on every skipped
shift (debug mode), work counters that are deterministic and add up."""

import numpy as np
import pytest

import backends
from backends import contract, pruning
from backends.implementations.cpu import CPUBackend
from backends.tls_power import power
from datasets import synthetic
from tests.conftest import box_light_curve

CASES = {
    "varying-dy": dict(),
    "constant-dy": dict(dy="constant", seed=4, depth=6e-4),
    "noise-only": dict(depth=0.0, seed=6),
    "t~3000d": dict(epoch=3000.0, seed=5),
    "deep": dict(depth=2e-2, seed=7),
}


@pytest.fixture(scope="module", params=list(CASES))
def case_plan(request):
    t, y, dy = box_light_curve(**CASES[request.param])
    plan, periods = backends.make_plan(t, y, dy)
    return plan, periods[:: max(1, periods.size // 150)]


def test_pruned_equals_brute_force_and_bounds_hold(case_plan):
    """Every skipped shift checked exactly (debug): none beat its bound, and
    every period's chi2, row and depth are TLS's own search_period's."""
    plan, periods = case_plan
    ref = backends.get_backend("reference").search(plan, periods)
    cpu = CPUBackend(debug=True)
    got = cpu.search(plan, periods)
    contract.assert_exact(got, ref, "cpu vs search_period")
    np.testing.assert_array_equal(got.rows, ref.rows)
    np.testing.assert_allclose(got.depths, ref.depths, rtol=0, atol=1e-12)
    assert cpu.work["bound_violations"] == 0
    assert cpu.work["fine_pass"] < cpu.work["depth_pass"]  # it did prune


def test_counters_are_deterministic_and_consistent(small_plan):
    plan, periods = small_plan
    runs = []
    for _ in range(2):
        cpu = CPUBackend()
        cpu.search(plan, periods[:300])
        runs.append(pruning.work_summary(cpu.work))
    assert runs[0] == runs[1]
    w = runs[0]
    assert w["shifts"] >= w["depth_pass"] >= w["coarse_pass"] >= w["fine_pass"] > 0
    assert 0 < w["fraction_of_brute_force"] < 1
    assert w["seed_dots"] <= w["fine_pass"] + w["seed_dots"]


def test_host_work_of_a_grids_own_windows_is_counted_once_and_of_others_each_time(small_plan, monkeypatch):
    """The model grid's own windows (``Plan.width_windows``, read-only, shared
    by the light curves of one template cache) are counted once; other
    windows, a caller's, are counted at every call, so a change is seen."""
    plan, periods = small_plan
    lo, hi = plan.width_windows(plan.model.grid.periods)
    assert not lo.flags.writeable and not hi.flags.writeable
    expected = pruning.host_work(plan, lo.copy(), hi.copy())
    calls = []
    from backends import scan_jobs

    counted = scan_jobs.window_sum
    monkeypatch.setattr(scan_jobs, "window_sum", lambda *a: calls.append(1) or counted(*a))
    assert pruning.host_work(plan, lo, hi) == pruning.host_work(plan, lo, hi) == expected
    assert len(calls) <= 2  # the first call's two sums, if the entry was not made before
    mine_lo, mine_hi = lo.copy(), hi.copy()
    before = pruning.host_work(plan, mine_lo, mine_hi)
    mine_hi[:] = mine_lo  # no width at any period
    assert pruning.host_work(plan, mine_lo, mine_hi) == {"shifts": 0, "brute_force_macs": 0} != before


def test_debug_mode_catches_a_broken_bound(small_plan, monkeypatch):
    """A bound made too small (rho and the piece means zeroed) must be caught:
    the debug mode is a test that can fail."""
    plan, periods = small_plan
    pieces = plan.templates.pieces
    broken = pruning.PieceTables(**{**pieces.__dict__, "rho": pieces.rho * 0.0, "c": pieces.c * 0.0,
                                    "mean": pieces.mean * 0.0})
    monkeypatch.setitem(plan.templates.__dict__, "pieces", broken)
    with pytest.raises(pruning.BoundViolation):
        CPUBackend(debug=True).search(plan, periods[:200])


def test_debug_mode_catches_a_broken_linear_bound(small_plan, monkeypatch):
    """The same for the K-piece linear bound alone (the one-piece bound intact)."""
    plan, periods = small_plan
    pieces = plan.templates.pieces
    broken = pruning.PieceTables(**{**pieces.__dict__, "line_rho": pieces.line_rho * 0.0,
                                    "line_c": pieces.line_c * 0.5,
                                    "line_slope": pieces.line_slope * 0.0})
    monkeypatch.setitem(plan.templates.__dict__, "pieces", broken)
    with pytest.raises(pruning.BoundViolation):
        CPUBackend(debug=True).search(plan, periods[:200])


def test_constant_a2_floor_is_below_every_shifts_a2_and_near_it():
    """w_least sum a^2 less its allowance is at most the computed A2 at every
    shift of a fold whose least weight sits under the template, and within
    its ulps of it there (a floor of 0 would pass the first and fail this)."""
    from backends.implementations.cpu import const_a2_floor

    rng = np.random.default_rng(3)
    a = rng.uniform(0.0, 1.0, 257)
    w = rng.uniform(0.7, 1.3, 4000)
    w[1000:1257] = w.min()
    a2 = np.correlate(w, a * a, mode="valid")
    floor = const_a2_floor(w.min(), float(np.sum(a * a)), a.size, 0.0)
    assert floor <= a2.min()
    assert floor >= a2.min() * (1.0 - 1e-12)


def test_debug_mode_catches_a_broken_constant_a2_floor(case_plan, monkeypatch):
    """A least weight made too large (weights that differ) must be caught:
    the constant floor is what decides those shifts."""
    plan, periods = case_plan
    if plan.lc.uniform_weight:
        pytest.skip("uniform weights: A2 is known, no floor")
    monkeypatch.setitem(plan.lc.__dict__, "least_weight", 3.0 * plan.lc.w.max())
    with pytest.raises(pruning.BoundViolation):
        CPUBackend(debug=True).search(plan, periods[:100])


def test_linear_segmentation_fits_a_trapezoid_exactly():
    a = np.r_[np.linspace(0, 1, 12), np.ones(20), np.linspace(1, 0, 12)]
    b = pruning.segment(a, 3, linear=True)
    assert list(b) in ([0, 11, 32, 44], [0, 12, 32, 44])  # a[11] lies on both lines
    c, slope, centre, rho, defects = pruning._line_terms(a, b)
    assert rho < 1e-13 and max(defects) < 1e-12
    np.testing.assert_allclose(slope, [1 / 11, 0, -1 / 11], atol=1e-15)


def test_segmentation_is_sse_optimal_on_a_step():
    a = np.r_[np.zeros(10), np.ones(20), np.zeros(10)]
    b = pruning.segment(a, 3)
    assert list(b) == [0, 10, 30, 40]
    means, rho = pruning._piece_terms(a, b)
    assert rho == 0 and list(means) == [0, 1, 0]


@pytest.mark.parametrize("template", ["default", "box", "grazing"])
def test_power_through_tls_meets_tls_exact_contract(template):
    """``power(backend="bench-cpu")`` against ``power(backend="fused")``:
    per-period chi2 within 1e-10, period/T0/duration/depth/SDE/SNR within 1e-7."""
    lc = synthetic.simulate(seed=2, preset="k2", baseline=20.0, depth_ppm=900, noise_ppm=300)
    fused = power(lc.t, lc.y, lc.dy, backend="fused", use_threads=2, transit_template=template)
    ours = power(lc.t, lc.y, lc.dy, backend="bench-cpu", use_threads=2, transit_template=template)
    contract.assert_exact(ours, fused, template)


def test_work_counters_in_results_meta(small_lc):
    results = backends.search(*small_lc, backend="cpu", period_max=6.0)
    work = results.meta["work"]
    assert set(pruning.COUNTERS) <= set(work)
    assert work["shifts"] > work["fine_pass"] > 0
    assert work["bound_violations"] == 0


def test_pruned_stage_thresholds_are_checked():
    from backends.implementations.pruned import PrunedBackend

    with pytest.raises(ValueError, match="at least 1"):
        PrunedBackend(prune_min=0)
    for jobs in (0, 9):
        with pytest.raises(ValueError, match="scan_jobs must be 1 to 8"):
            PrunedBackend(scan_jobs=jobs)


def test_pruned_fine_bound_is_checked_and_linear_only_where_its_prefix_sums_fit(small_lc, monkeypatch):
    """pruned_period's linear K-piece bound needs a fifth prefix array (pj,
    M + 1 doubles) beside the fold: taken where it fits the shared memory left
    (host logic; the GPU tests run both bounds)."""
    from backends.implementations.pruned import PrunedBackend

    with pytest.raises(ValueError, match="fine_bound must be one of"):
        PrunedBackend(fine_bound="linear")
    plan = backends.make_plan(*box_light_curve(dy="constant"))[0]
    varying = backends.make_plan(*small_lc)[0]
    assert plan.lc.uniform_weight > 0 and not varying.lc.uniform_weight
    m = plan.lc.size + plan.templates.maxwidth
    assert PrunedBackend.shared_doubles(plan, True) - PrunedBackend.shared_doubles(plan) == m + 1
    assert PrunedBackend.shared_doubles(varying, True) == PrunedBackend.shared_doubles(varying)
    for room, line in ((8 * PrunedBackend.shared_doubles(plan, True), True),
                       (8 * PrunedBackend.shared_doubles(plan, True) - 8, False)):
        for options, expected in (({}, line), ({"fine_bound": "constant"}, False), ({"layout": "global"}, False)):
            backend = PrunedBackend(**options)
            monkeypatch.setattr(backend, "_period_shared", lambda plan: room)
            assert backend.period_line(plan) == expected
            assert not backend.period_line(varying)  # weights that differ: constant pieces


def test_a_template_that_skips_the_bounds_skips_the_k_piece_bound_too():
    """As pruned.cu's fine stage does: fine_min is raised to prune_min, so cpu and GPU count alike."""
    assert pruning.tuning(100, prune_min=64, fine_min=8)[2:4] == (64, 64)
    assert pruning.tuning(100, prune_min=1, fine_min=32)[2:4] == (1, 32)


@pytest.mark.parametrize("depth_min", [1e-5, 3.3e-4, 0.0])
def test_depth_limits_are_the_depth_filters_edge(depth_min):
    """A window sum passes the depth filter (1 - s / d > depth_min, as every
    backend rounds it) exactly when it is at most its width's limit."""
    widths = np.arange(1, 700)
    limit = pruning.depth_limits(widths, depth_min)
    assert np.all(1.0 - limit / widths > depth_min)
    assert not np.any(1.0 - np.nextafter(limit, np.inf) / widths > depth_min)
    rng = np.random.default_rng(3)
    s = limit[:, None] + widths[:, None] * rng.normal(0.0, 1e-15, (widths.size, 50))
    np.testing.assert_array_equal(s <= limit[:, None], 1.0 - s / widths[:, None] > depth_min)


def test_coarse_k_is_within_its_pad_of_the_exact_stages():
    """pruned's one-piece bound takes k' = RN(kscale - s RN(RN(1 / d) kscale))
    (one fma, rounded once: Fraction) for the exact stage's
    RN(RN(1 - RN(s / d)) kscale): within 3.01 u (1 / D + 2) of it relative,
    which COARSE_PAD covers (twice, and PAD) from COARSE_DEPTH deep on."""
    from fractions import Fraction

    u = 2.0 ** -53
    assert pruning.PAD + 2 * 3.01 * u * (1 / pruning.COARSE_DEPTH + 2) < pruning.COARSE_PAD
    rng = np.random.default_rng(8)
    worst = 0.0
    for _ in range(4000):
        d = int(rng.integers(1, 3000))
        depth = float(np.exp(rng.uniform(np.log(pruning.COARSE_DEPTH), np.log(0.9))))
        s = float(d * (1.0 - depth) * (1.0 + rng.normal(0.0, 1e-3 * depth)))
        kscale = float(np.exp(rng.uniform(-3.0, 8.0)))
        k = (1.0 - s / d) * kscale
        if k < pruning.COARSE_DEPTH * kscale:
            continue
        rdk = (1.0 / d) * kscale
        k_coarse = float(Fraction(kscale) - Fraction(s) * Fraction(rdk))
        x = s / d
        error = abs(k_coarse - k) / k
        assert error <= 3.01 * u * (1.0 / (1.0 - x) + 2.0), (d, s, kscale)
        worst = max(worst, error * (1.0 - x))
    assert worst > 0.5 * u  # the sample reaches the bound's order, not only exact cases
