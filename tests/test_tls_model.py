"""``backends.tls_model``: a light curve's plan made once and handed through
``power()``; grids and templates shared between light curves through bounded,
thread-safe caches keyed on every input."""

import threading
import warnings

import numpy as np
import pytest
from transitleastsquares import main as tls_main
from transitleastsquares import tls_constants

import backends
from backends import tls_model
from backends.tls_bridge import search_backend
from backends.tls_power import planned_power, power
from tests.conftest import box_light_curve


@pytest.fixture()
def empty_caches():
    """The caches empty, and their build counts 0, within the test."""
    for cache in (tls_model.GRIDS, tls_model.TEMPLATES):
        cache.clear()
        cache.builds = 0
    yield
    tls_model.GRIDS.clear()
    tls_model.TEMPLATES.clear()


def counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **k: calls.append(name) or real(*a, **k))
    return calls


def test_grids_and_templates_are_built_once_for_curves_alike(empty_caches, monkeypatch):
    grids = counting(monkeypatch, tls_main, "period_grid")
    templates = counting(monkeypatch, tls_main, "get_cache")
    plans = [backends.make_plan(*box_light_curve(seed=k))[0] for k in range(3)]  # same span and N
    assert len(grids) == 1 and len(templates) == 1
    assert plans[0].templates is plans[2].templates and plans[0].lc is not plans[2].lc
    backends.make_plan(*box_light_curve(days=19.0))  # another span: its own grid and templates
    assert len(grids) == 2 and len(templates) == 2


def test_the_grid_sorts_ascending_by_a_reversing_slice_only_where_strictly_descending(empty_caches, monkeypatch):
    model = backends.make_plan(*box_light_curve(seed=3))[0].model
    assert model.grid.ascending == slice(None, None, -1)  # TLS's own grid
    np.testing.assert_array_equal(model.grid.periods[model.grid.ascending], np.sort(model.grid.periods))
    tied = np.array([5.0, 4.0, 4.0, 3.0])  # a grid with a repeated period: sorted by argsort
    monkeypatch.setattr(tls_main.transitleastsquares, "_grids", lambda self: (tied, [0.1]))
    tls_model.GRIDS.clear()
    grid = backends.make_plan(*box_light_curve(seed=3))[0].model.grid
    np.testing.assert_array_equal(grid.ascending, np.argsort(tied))


def test_width_windows_of_the_grid_are_made_once_for_curves_alike(empty_caches, monkeypatch):
    """Plans sharing a template cache share their grid's width windows (read
    only, equal to a fresh computation); other periods are computed each time."""
    from backends import plan as plan_module

    made = counting(monkeypatch, plan_module, "_width_limits")
    (first, periods), (second, same_periods) = (backends.make_plan(*box_light_curve(seed=k)) for k in (1, 2))
    lo, hi = first.width_windows(periods)
    assert all(a is b for a, b in zip(second.width_windows(same_periods), (lo, hi))) and len(made) == 1
    fresh = first.width_windows(periods.copy())
    assert len(made) == 2
    np.testing.assert_array_equal(fresh[0], lo)
    np.testing.assert_array_equal(fresh[1], hi)
    with pytest.raises(ValueError, match="read-only"):
        lo[0] = 0
    other, other_periods = backends.make_plan(*box_light_curve(days=19.0))  # its own templates
    other.width_windows(other_periods)
    assert len(made) == 3


def test_power_takes_the_plan_and_builds_nothing_again(small_lc, monkeypatch):
    plan, _ = backends.make_plan(*small_lc, period_max=6.0)
    built = [counting(monkeypatch, tls_main, name) for name in ("period_grid", "duration_grid", "get_cache")]
    searched = []
    cpu = backends.get_backend("cpu")
    monkeypatch.setattr(cpu, "search", lambda p, periods, progress=None: searched.append(p) or
                        type(cpu).search(cpu, p, periods, progress))
    ours = planned_power(plan, search_backend(cpu, plan))
    assert not any(built) and searched == [plan]
    theirs = power(*small_lc, backend="bench-cpu", period_max=6.0)
    for key in ("period", "T0", "SDE", "snr", "duration", "depth"):
        assert ours[key] == theirs[key], key
    np.testing.assert_array_equal(ours.power, theirs.power)


@pytest.mark.parametrize("option, value", [
    ("R_star", 0.9), ("M_star", 0.9), ("period_min", 1.0), ("period_max", 6.0), ("oversampling_factor", 2),
    ("n_transits_min", 3), ("duration_grid_step", 1.2), ("R_star_min", 0.2), ("R_star_max", 3.0),
    ("M_star_min", 0.2), ("M_star_max", 1.1)])
def test_every_grid_option_is_in_the_keys(small_lc, option, value):
    plain = tls_model.PlannedModel(*small_lc, {})
    other = tls_model.PlannedModel(*small_lc, {option: value})
    assert plain.grid_key() != other.grid_key() and plain.template_key() != other.template_key()


@pytest.mark.parametrize("option, value", [
    ("transit_template", "box"), ("transit_template", "grazing"), ("per", 10.0), ("rp", 0.05), ("a", 20.0),
    ("inc", 89.0), ("b", 0.5), ("ecc", 0.1), ("w", 80.0), ("u", [0.3, 0.2]), ("limb_dark", "linear"),
    ("T0_fit_margin", 0.02), ("T0_search_margin", 0.02), ("transit_depth_min", 1e-4)])
def test_every_template_option_is_in_its_key(small_lc, option, value):
    options = {option: value, "u": [0.5]} if option == "limb_dark" else {option: value}
    plain = tls_model.PlannedModel(*small_lc, {})
    assert plain.template_key() != tls_model.PlannedModel.template_key(_with(plain, options))


def _with(model, options):
    """A model's attributes after TLS validates ``options`` (no grid built)."""
    from types import SimpleNamespace

    from transitleastsquares.validate import validate_args

    out = SimpleNamespace(t=model.t, y=model.y, grid_key=model.grid_key)
    validate_args(out, options)
    return out


def test_the_length_and_tls_constants_are_in_the_keys(small_lc, monkeypatch):
    t, y, dy = small_lc
    plain = tls_model.PlannedModel(t, y, dy, {})
    shorter = tls_model.PlannedModel(t[:-1], y[:-1], dy[:-1], {})
    assert plain.template_key() != shorter.template_key()
    grid_key, template_key = plain.grid_key(), plain.template_key()
    monkeypatch.setattr(tls_constants, "SUPERSAMPLE_SIZE", 5000)
    assert plain.grid_key() == grid_key and plain.template_key() != template_key
    monkeypatch.setattr(tls_constants, "MINIMUM_PERIOD_GRID_SIZE", 50)
    assert plain.grid_key() != grid_key


def test_a_cached_grid_warns_as_tls_would_each_time(empty_caches):
    t = np.arange(0.0, 2.5, 10 / 1440)  # under 100 periods: TLS's fallback grid, with a warning
    y = 1.0 + np.random.default_rng(0).normal(0.0, 1e-4, t.size)
    for _ in range(2):
        with pytest.warns(UserWarning, match="period_grid defaults to R_star=1"):
            backends.make_plan(t, y)
    assert tls_model.GRIDS.builds == 1


def test_an_unhashable_option_is_built_for_that_curve_alone(small_lc, empty_caches):
    plan, periods = backends.make_plan(*small_lc, R_star=np.array(1.0))  # TLS takes it; no key can
    assert tls_model.TEMPLATES.builds == 0 and tls_model.GRIDS.builds == 0
    same, same_periods = backends.make_plan(*small_lc)
    np.testing.assert_array_equal(periods, same_periods)
    np.testing.assert_array_equal(plan.templates.a, same.templates.a)


def test_an_option_no_key_can_take_gets_tls_own_error(small_lc):
    with pytest.raises(ValueError) as theirs:
        power(*small_lc, backend="bench-cpu", u="not numbers", period_max=6.0)
    with pytest.raises(ValueError) as ours:
        backends.search(*small_lc, backend="cpu", u="not numbers", period_max=6.0)
    assert str(ours.value) == str(theirs.value)


def test_threads_build_one_key_once(empty_caches):
    curves = [box_light_curve(seed=k) for k in range(16)]
    barrier = threading.Barrier(16)

    def plan(curve):
        barrier.wait()
        return backends.make_plan(*curve)[0]

    out = [None] * 16
    threads = [threading.Thread(target=lambda k=k: out.__setitem__(k, plan(curves[k]))) for k in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert tls_model.GRIDS.builds == 1 and tls_model.TEMPLATES.builds == 1
    assert len({id(p.templates) for p in out}) == 1


def test_caches_are_bounded():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(40):
            backends.make_plan(*box_light_curve(), period_max=4.0 + 0.01 * k)
    assert len(tls_model.GRIDS) == tls_model.GRIDS.maxsize == 32
    assert len(tls_model.TEMPLATES) == tls_model.TEMPLATES.maxsize == 16


@pytest.mark.parametrize("with_dy", [True, False])
def test_a_cleaned_light_curve_skips_only_what_tls_would_not_change(with_dy):
    """``plan_light_curve`` hands TLS's model the cleaned arrays as they are:
    the same t, y, dy and options as TLS's own cleaning and checks give."""
    from backends import inputs

    lc = inputs.clean(*box_light_curve(seed=5, dy="varying" if with_dy else None))
    theirs = tls_model.PlannedModel(lc.t, lc.y, lc.dy, {"period_max": 6.0})
    ours = tls_model.PlannedModel(lc.t, lc.y, lc.dy, {"period_max": 6.0}, cleaned=True)
    for name in ("t", "y", "dy"):
        np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), strict=True)
    assert {k: v for k, v in vars(ours).items() if k not in ("t", "y", "dy", "problem")} == \
        {k: v for k, v in vars(theirs).items() if k not in ("t", "y", "dy", "problem")}
