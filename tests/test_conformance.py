"""Every backend that can run here against ``cpu``, on the same plans and
end to end. Backends join by registering; GPU ones run on the device machine."""

import numpy as np
import pytest

import backends
from backends import contract
from tests.conftest import box_light_curve

CANDIDATES = [n for n in backends.backend_names() if n not in ("cpu", "reference")]


def _runnable(name):
    why = backends.available_backends()[name]
    if why is not None:
        pytest.skip(f"{name}: {why}")
    return backends.get_backend(name)


def _spectrum_checks(name, ours, ref):
    """An exact backend meets TLS's exact contract; an approximate one its
    approximate contract."""
    found = contract.compare(ours, ref)
    expected = "exact" if backends.registry.backend_class(name).exact else "approximate"
    assert found.verdict in (("exact",) if expected == "exact" else ("exact", "approximate")), \
        f"{name}: {found.verdict} ({found.worst()})"
    assert ours.period == ref.period


@pytest.mark.parametrize("name", CANDIDATES)
@pytest.mark.parametrize("case", [dict(), dict(epoch=3000.0, seed=2, dy=None)], ids=["plain", "t~3000d"])
def test_per_period_chi2_matches_cpu(name, case):
    backend = _runnable(name)
    plan, periods = backends.make_plan(*box_light_curve(**case))
    subset = periods[:400]
    ref = backends.get_backend("cpu").search(plan, subset)
    got = backend.search(plan, subset)
    if backend.exact:
        contract.assert_exact(got, ref, name)
        np.testing.assert_array_equal(got.rows, ref.rows)
    else:
        np.testing.assert_allclose(got.chi2, ref.chi2, rtol=contract.APPROX_CHI2_RTOL)


@pytest.mark.parametrize("name", CANDIDATES)
def test_end_to_end_matches_cpu(name, small_lc):
    _runnable(name)
    ref = backends.search(*small_lc, backend="cpu")
    ours = backends.search(*small_lc, backend=name)
    _spectrum_checks(name, ours, ref)
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
