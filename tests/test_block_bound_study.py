"""scripts/block_bound_study.py: a block's bound is looser than its shifts'
(it passes every block holding a per-shift survivor: the ideal's shifts),
the aligned bound looser than the exact one, and a gate keeps at least the
listed shifts the aligned bound keeps; the row gate's run bounds (shared by
the reports' gate studies) bound every window of a row."""

import numpy as np

import block_bound_study


def test_block_bounds_keep_every_survivor_and_aligned_is_looser():
    t = block_bound_study.study("k2", [8], n_periods=3)[8]
    assert t["listed"] > 0 and t["blocks"] > 0
    assert t["coarse"] <= t["ideal_shifts"] <= t["exact_shifts"] <= t["aligned_shifts"] <= t["listed"]
    assert t["coarse"] < t["ideal_shifts"]  # blocks with a survivor hold listed shifts that do not survive
    assert t["exact_blocks"] <= t["aligned_blocks"] <= t["blocks"]
    assert t["aligned_shifts"] <= t["aligned_all"] <= t["shifts"]


def test_runs_bound_every_window_of_a_row_and_the_union_is_its_samples():
    rng = np.random.default_rng(3)
    u = rng.normal(size=500)
    prefix, prefix2 = (np.concatenate([[0.0], np.cumsum(x)]) for x in (u, u * u))
    m, d = u.size, 17
    for first in (0, 40, 301):
        last = first + 31
        sums = prefix[np.arange(first, last + 1) + d] - prefix[first:last + 1]
        for span in (8, 32):
            s_hi, a0, e1 = block_bound_study.runs_bounds(prefix, m, first, last, d, span)
            assert s_hi >= sums.max() and a0 <= first and e1 >= min(last + d, m)
            assert a0 % span == 0 and (e1 % span == 0 or e1 == m)
        root = block_bound_study.union_root(prefix, prefix2, first, last + d)
        np.testing.assert_allclose(root, np.sqrt(np.var(u[first:last + d]) * (last + d - first)))
