"""scripts/tensor_screen_study.py (issue 12's tensor-core lead): a float16
screen with its proven allowance and a float64 re-check finds brute force's
best width and shift; tensor_screen.cu's fragment addressing forms every
tile's AR (by float16 and by the int8 gate's products; with weights that
differ, A2 too) within the allowance the kernel forms."""

import tensor_screen_study as tss


def test_the_half_precision_screen_and_its_recheck_find_brute_forces_best_shift():
    tallies = tss.study("k2", n_periods=2)  # asserts the best (gain, width, shift) per period and variant
    for variant, t in tallies.items():
        assert t["periods"] == 2
        assert 0 < t["worst_error_of_bound"] < 1, variant
    assert 2 <= tallies["fp16"]["rechecks"] < tallies["fp16"]["listed"] / 1000
    assert tallies["split2"]["rechecks"] <= tallies["fp16"]["rechecks"] < tallies["bf16"]["rechecks"]


def test_the_kernels_fragments_form_each_tiles_ar_within_the_allowance():
    worst = tss.emulate("k2", n_periods=1)
    assert 1e-3 < worst["ar"] < 1  # a wrong lane or register mapping is off by the data's size
    assert 1e-3 < worst["ar8"] < 1  # the int8 gate's products, within its allowance E8
    assert worst["a2"] == 0.0  # equal weights: no second product


def test_with_weights_that_differ_the_second_products_a2_is_within_its_allowance_too():
    worst = tss.emulate("k2w", n_periods=1)
    assert 1e-3 < worst["ar"] < 1 and 1e-3 < worst["ar8"] < 1 and 1e-3 < worst["a2"] < 1


def test_with_weights_that_differ_a_second_product_for_a2_keeps_the_screen_as_tight():
    t = tss.weighted_study("k2w", n_periods=2)  # asserts the best (gain, width, shift) per period
    assert t["periods"] == 2
    assert 2 <= t["rechecks"] < t["listed"] / 1000
    assert 0 < t["worst_a2_error_of_bound"] < 1
    assert t["gated"] < t["tiles"] / 20
