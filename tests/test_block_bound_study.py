"""scripts/block_bound_study.py: a block's bound is looser than its shifts'
(it passes every block holding a per-shift survivor: the ideal's shifts),
the aligned bound looser than the exact one, and a gate keeps at least the
listed shifts the aligned bound keeps."""

import block_bound_study


def test_block_bounds_keep_every_survivor_and_aligned_is_looser():
    t = block_bound_study.study("k2", [8], n_periods=3)[8]
    assert t["listed"] > 0 and t["blocks"] > 0
    assert t["coarse"] <= t["ideal_shifts"] <= t["exact_shifts"] <= t["aligned_shifts"] <= t["listed"]
    assert t["coarse"] < t["ideal_shifts"]  # blocks with a survivor hold listed shifts that do not survive
    assert t["exact_blocks"] <= t["aligned_blocks"] <= t["blocks"]
    assert t["aligned_shifts"] <= t["aligned_all"] <= t["shifts"]
