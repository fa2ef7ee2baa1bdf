"""scripts/width_pair_study.py (a lead for issue 13's kernel): a neighbouring
width's AR bounds a same-stride width's AR (asserted in the study), and the
bound closes part of the paired widths' tiles, never all."""

import width_pair_study as wps


def test_a_neighbouring_widths_ar_bounds_and_closes_some_tiles():
    t = wps.study("k2", n_periods=3)  # asserts AR_w2 <= its bound at every shift
    assert t["widths"] > t["paired"] > 0 and t["tiles"] > t["open_after_loop"]
    assert 0 < t["skipped_cost"] < t["paired_cost"] < t["cost"]
