"""validation.decision: the protocol's threshold, bounds and pass/fail rule at its edges."""

import math

import numpy as np
import pytest

from validation import decision


def test_threshold_leaves_at_most_one_percent_above():
    assert decision.threshold(np.arange(1.0, 101.0)) == 99.0  # one of 100 above
    assert decision.threshold(np.arange(1000.0)[::-1]) == 989.0  # ten of 1000 above
    assert decision.threshold(np.arange(1.0, 51.0)) == 50.0  # 0.5 allowed: none above
    assert decision.threshold([3.0, math.nan] + [1.0] * 99) == 1.0  # a failed search left out
    assert decision.threshold(np.arange(1.0, 11.0), rate=0.2) == 8.0
    with pytest.raises(ValueError, match="no calibration null"):
        decision.threshold([math.nan])


def test_clopper_pearson():
    assert decision.clopper_pearson(5, 10, 0.05) == pytest.approx((0.187086, 0.812914), abs=1e-6)
    low, high = decision.clopper_pearson(0, 1000, 0.05)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 1000))
    assert decision.clopper_pearson(7, 7, 0.05)[1] == 1.0
    assert decision.clopper_pearson(0, 0, 0.05) == (0.0, 1.0)
    with pytest.raises(ValueError, match="out of"):
        decision.clopper_pearson(3, 2, 0.05)


def counts(n=1000, rec=600, lost=0, gained=0, m=1000, fp=10, extra=0, fewer=0):
    """Counts with the reference's rates fixed and the backend's following from the pairs."""
    return decision.Counts(injections=n, reference_recovered=rec, backend_recovered=rec - lost + gained,
                           lost=lost, gained=gained, nulls=m, reference_fp=fp,
                           backend_fp=fp + extra - fewer, extra=extra, fewer=fewer)


def test_an_exact_backend_passes_at_the_protocols_sizes():
    verdict = decision.judge(counts())
    assert verdict.passed and verdict.reasons == ()
    assert verdict.recovery_drop == 0 and verdict.fpr_change == 0
    assert 0 < verdict.recovery_drop_upper < 0.01
    assert set(verdict.bounds) == set(decision.PROPORTIONS)


def test_a_small_run_cannot_pass():
    verdict = decision.judge(counts(n=10, rec=6, m=10, fp=0))
    assert not verdict.passed and len(verdict.reasons) == 2
    assert "recovery drop upper bound" in verdict.reasons[0]
    assert "false-positive change bounds" in verdict.reasons[1]
    assert not decision.judge(counts(n=0, rec=0, m=0, fp=0)).passed


def edge(make):
    """The first k at which ``make(k)`` fails, with the verdicts either side of it."""
    verdicts = [decision.judge(make(k)) for k in range(40)]
    first = next(k for k, v in enumerate(verdicts) if not v.passed)
    assert first > 0 and not any(v.passed for v in verdicts[first:])  # one edge, then fail
    return first, verdicts[first - 1], verdicts[first]


def test_recovery_drop_edge():
    first, last_pass, first_fail = edge(lambda k: counts(lost=k))
    assert last_pass.recovery_drop_upper < decision.MAX_RECOVERY_DROP <= first_fail.recovery_drop_upper
    assert "recovery drop" in first_fail.reasons[0] and len(first_fail.reasons) == 1
    # recoveries the backend gains elsewhere offset losses (paired difference)
    assert decision.judge(counts(lost=first, gained=first)).passed
    assert decision.judge(counts(gained=150)).passed  # better recovery never fails


def test_false_positive_change_edges_both_ways():
    first, last_pass, first_fail = edge(lambda k: counts(extra=k))
    assert last_pass.fpr_change_bounds[1] <= decision.MAX_FPR_CHANGE < first_fail.fpr_change_bounds[1]
    first_down, _, fail_down = edge(lambda k: counts(fp=200, fewer=k))
    assert fail_down.fpr_change_bounds[0] < -decision.MAX_FPR_CHANGE
    assert "false-positive change" in fail_down.reasons[0]
    assert first < 30 and first_down < 30


def test_inconsistent_counts_are_refused():
    with pytest.raises(ValueError, match="inconsistent"):
        decision.judge(counts(rec=1001))
    with pytest.raises(ValueError, match="discordant"):
        decision.judge(decision.Counts(100, 50, 50, 5, 0, 100, 1, 1, 0, 0))
    with pytest.raises(ValueError, match="discordant"):
        decision.judge(decision.Counts(100, 50, 50, 0, 0, 100, 1, 1, 2, 2))
