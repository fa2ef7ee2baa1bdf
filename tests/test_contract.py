"""backends.contract: the exact and approximate bars, for per-period statistics
and for whole TLS results."""

import numpy as np
import pytest

from backends import contract
from backends.protocol import PeriodStats


def stats(chi2):
    chi2 = np.asarray(chi2, float)
    return PeriodStats(chi2, np.zeros(chi2.size, np.int32), np.zeros(chi2.size))


def results(**changed):
    out = dict(chi2=np.array([10.0, 20.0]), period=5.0, T0=1.0, duration=0.2, depth=0.999,
               SDE=12.0, snr=9.0)
    out.update(changed)
    return out


def test_per_period_chi2_against_each_bar():
    ref = stats([10.0, 20.0])
    assert contract.assert_exact(stats([10.0, 20.0 * (1 + 1e-11)]), ref).chi2 < contract.EXACT_CHI2_RTOL
    with pytest.raises(AssertionError, match="cpu: not exact by TLS's contract: chi2 1.00e-06"):
        contract.assert_exact(stats([10.0, 20.0 * (1 + 1e-6)]), ref, "cpu")
    contract.assert_matches(stats([10.0, 20.0 * (1 + 1e-3)]), ref, exact=False)
    with pytest.raises(AssertionError, match="not approximate"):
        contract.assert_matches(stats([10.0, 20.0 * 1.01]), ref, exact=False)


def test_results_against_each_bar():
    ref = results()
    assert contract.assert_exact(results(T0=1.0 + 1e-9), ref).verdict == "exact"
    with pytest.raises(AssertionError, match="SDE 1.00e-03"):
        contract.assert_exact(results(SDE=12.012), ref, "basic")
    found = contract.assert_matches(results(SDE=12.2, chi2=np.array([10.0, 20.01])), ref, exact=False)
    assert found.verdict == "approximate"
    with pytest.raises(AssertionError, match="not approximate"):
        contract.assert_matches(results(SDE=13.0), ref, exact=False)
