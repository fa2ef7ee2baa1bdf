"""Every backend that can run here against ``cpu``, on the same plans and
end to end. Backends join by registering; GPU ones run on the device machine."""

import numpy as np
import pytest

import backends
from backends.contract import assert_matches
from tests.conftest import box_light_curve

CANDIDATES = [n for n in backends.backend_names() if n not in ("cpu", "reference")]


def _runnable(name):
    why = backends.available_backends()[name]
    if why is not None:
        pytest.skip(f"{name}: {why}")
    return backends.get_backend(name)


def _accepted(backend, plan):
    """Skip where the backend refuses the plan by its stated limits
    (``refuses``: e.g. ``tensor`` takes equal weights only); each backend's
    own tests check its refusals."""
    why = backend.refuses(plan)
    if why is not None:
        pytest.skip(f"{backend.name}: {why}")


@pytest.mark.parametrize("name", CANDIDATES)
@pytest.mark.parametrize("case", [dict(), dict(epoch=3000.0, seed=2, dy=None)], ids=["plain", "t~3000d"])
def test_per_period_chi2_matches_cpu(name, case):
    backend = _runnable(name)
    plan, periods = backends.make_plan(*box_light_curve(**case))
    _accepted(backend, plan)
    subset = periods[:400]
    ref = backends.get_backend("cpu").search(plan, subset)
    got = backend.search(plan, subset)
    assert_matches(got, ref, backend.exact, name)  # TLS's contract: exact or approximate
    if backend.exact:
        np.testing.assert_array_equal(got.rows, ref.rows)


@pytest.mark.parametrize("name", CANDIDATES)
def test_end_to_end_matches_cpu(name, small_lc):
    backend = _runnable(name)
    _accepted(backend, backends.make_plan(*small_lc)[0])
    ref = backends.search(*small_lc, backend="cpu")
    ours = backends.search(*small_lc, backend=name)
    assert_matches(ours, ref, backend.exact, name)
    assert ours.period == ref.period
    assert ours.meta["backend"] == name


def test_batched_search_equals_one_batch(small_plan):
    """The base class's period batching (device memory bound) changes nothing."""
    from backends.implementations.cpu import CPUBackend

    class TinyBatches(CPUBackend):
        def max_batch_periods(self, plan):
            return 7

    plan, periods = small_plan
    whole = CPUBackend().search(plan, periods[:100])
    batched = TinyBatches().search(plan, periods[:100])
    np.testing.assert_array_equal(batched.chi2, whole.chi2)
    np.testing.assert_array_equal(batched.rows, whole.rows)


def test_progress_reports_every_period(small_plan):
    plan, periods = small_plan
    seen = []
    backends.get_backend("cpu").search(plan, periods[:300], progress=seen.append)
    assert sum(seen) == 300


@pytest.mark.parametrize("name", backends.backend_names())
@pytest.mark.parametrize("periods, message", [
    ([], "at least one trial period"), ([[2.0, 3.0]], "1-d array"),
    ([2.0, np.nan], "finite and positive"), ([2.0, -1.0], "finite and positive"), ([2.0, np.inf], "finite and positive"),
])
def test_bad_trial_periods_are_refused_before_any_work(name, periods, message, small_plan):
    """Every backend, GPU ones included (the check comes before the upload,
    so it runs without a GPU): a clear ValueError, not a crash on the device."""
    backend = backends.registry.backend_class(name)()
    with pytest.raises(ValueError, match=message):
        backend.search(small_plan[0], periods)
    with pytest.raises(ValueError, match=message):
        backend.search_many([(small_plan[0], periods)])
