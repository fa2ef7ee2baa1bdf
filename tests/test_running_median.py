"""``backends.running_median``: TLS's running median, to the bit, of
arrays (random, with ties, sorted either way, constant; kernels from
1 to longer than half the array), the kernels it refuses, and its sort
order where the packed keys tie."""

import numpy as np
import pytest
from transitleastsquares.helpers import running_median

from backends.running_median import running_median as ours
from backends.running_median import SHORT_RUN, sort_order


def arrays(seed):
    rng = np.random.default_rng(seed)
    out = []
    for kind in range(5):
        for n in (1, 2, 3, 64, 65, 91, 200, 2500):
            d = rng.normal(size=n)
            d = (d, np.round(d, 1), np.sort(d), np.sort(d)[::-1].copy(), np.full(n, 0.5))[kind]
            out += [(d, k) for k in (1, 3, 5, 31, 91, 151) if k <= n]
    return out


@pytest.mark.parametrize("seed", range(3))
def test_tls_running_median_to_the_bit(seed):
    for d, k in arrays(seed):
        np.testing.assert_array_equal(ours(d, k), running_median(d, k), err_msg=f"n={d.size} kernel={k}")


def test_kernels_it_cannot_take_are_refused():
    d = np.arange(10.0)
    for kernel in (0, 4, 11, -1):
        with pytest.raises(ValueError, match="odd, positive and no longer"):
            ours(d, kernel)


def test_sort_order_orders_values_whose_packed_keys_tie():
    rng = np.random.default_rng(0)
    cases = {
        "ulps apart": 1.0 + rng.integers(0, 64, 5000) * np.finfo(float).eps,  # all keys tie without 13 low bits
        # runs of 1 to SHORT_RUN + 1 tied keys, shuffled: sorted by insertion up to SHORT_RUN, argsorted beyond
        "short runs ulps apart": rng.permutation(np.repeat(rng.normal(size=SHORT_RUN + 1), np.arange(1, SHORT_RUN + 2))
                                                 * (1 + rng.integers(0, 8, (SHORT_RUN + 1) * (SHORT_RUN + 2) // 2)
                                                    * np.finfo(float).eps)),
        "signs, zeros, infinities, subnormals": np.array([0.0, -0.0, 1, -1, np.inf, -np.inf, 5e-324, -5e-324, 2, -2]),
        "equal values": np.full(300, -0.25),
        "normal": rng.normal(size=9679),
    }
    for name, d in cases.items():
        order = sort_order(d)
        np.testing.assert_array_equal(np.sort(order), np.arange(d.size), err_msg=name)
        np.testing.assert_array_equal(d[order], np.sort(d), err_msg=name)


def test_ulps_apart_spectrum_to_the_bit():
    d = 1.0 - np.random.default_rng(1).integers(0, 200, 3000) * np.finfo(float).eps
    np.testing.assert_array_equal(ours(d, 91), running_median(d, 91))
