"""What ``tensor_screen.cu`` reads of a template set: per width its sizes,
the depth filter's limit, the screen's allowance coefficients and the
template banded over 8 sub-shifts as float16 ``mma.sync`` B fragments.

The screen forms AR(i) = sum_j a_j u_(i+j) for 128 strided shifts of one width
at once: D[r, c] = sum_j A[r, j] B[j, c] with A[r, j] = u16[s0 + 8 S r + j]
(the fold's Hankel rows) and B[j, c] = a16[j - S c], so D[r, c] = AR(s0 +
S (8 r + c)). With u and a rounded to float16 after power-of-two scalings (u's
in the kernel, a's here), every product errs by at most a relative
(1 + 2^-11)^2 - 1 plus float16's subnormal steps, the fp32 accumulation by an
allowed L 2^-23 relative (an assumption, ~8x a truncation of 2^-22 per k-step
of 16 products: NVIDIA publishes no bound), and the float64 reference sum by
(L + 2) 2^-53, so |AR - AR16| <= e_coef sum|u| + e_abs over the window's
samples (``e_coef``; ``e_abs``'s per-light-curve terms the kernel adds).
With weights that differ, A2 = sum_j a_j^2 W_(i+j) varies by shift and comes
from a second product, of a^2 against the folded weights: its terms are all
positive, so |A2 - A2_16| <= e_rel A2 plus subnormal terms (the kernel's).
"""

from __future__ import annotations

import math

import numpy as np

from backends import pruning

TILE = 128  # strided shifts per tile: 16 rows x 8 columns of one m16n8 product
U16 = 2.0 ** -11  # float16's unit roundoff


def power_of_two_scale(x) -> float:
    """2^e with max|x| 2^e in (2^13, 2^14]: float16's range with room to round."""
    top = float(np.abs(x).max())
    return 1.0 if top == 0.0 else 2.0 ** (14 - math.ceil(math.log2(top)))


def half_bits(x) -> np.ndarray:
    """float16 bit patterns of ``x`` (round to nearest), as uint32."""
    return np.asarray(x, np.float64).astype(np.float16).view(np.uint16).astype(np.uint32)


def halves(x):
    """(low, high) float16 halves of half2 registers, as float64."""
    return tuple((y & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64) for y in (x, x >> 16))


def banded_fragments(a, stride, ksteps, scale) -> np.ndarray:
    """B[j, c] = a[j - stride c] * scale (zero outside the template) as
    m16n8k16 B fragments: k-steps x 32 lanes x (b0, b1), each a half2 (low
    half the smaller k). Lane (g, t) = (lane / 4, lane % 4) holds b0 = (B[2t,
    g], B[2t + 1, g]) and b1 = (B[2t + 8, g], B[2t + 9, g]) of each k-step."""
    band = np.zeros((16 * ksteps, 8))
    for c in range(8):
        band[stride * c:stride * c + a.size, c] = a * scale
    bits = half_bits(band)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    rows = 16 * np.arange(ksteps)[:, None] + 2 * t[None, :]
    b0 = bits[rows, g] | (bits[rows + 1, g] << 16)
    b1 = bits[rows + 8, g] | (bits[rows + 9, g] << 16)
    return np.stack([b0, b1], axis=-1).ravel().astype(np.uint32)


class TensorTables:
    """Per width of a template set: ``fields`` (k-steps and length as int32;
    the depth filter's flux-sum limit, k per unit box, sum a^2, ||a||_1, the
    allowance's e_coef, 1 / a's scale, the relative allowance e_rel of one
    product sum, 1 / a^2's scale as float64) and the B fragments
    of a (``bfrag``) and of a^2 (``bfrag2``, for A2 with weights that differ)
    at offsets ``b_off``; ``sections()`` for ``Staged``. What depends on the
    light curve's N (the shifts listed, the float16 fold's length) is
    ``fold_shape``'s."""

    INT_FIELDS = ("ksteps", "length")  # the widths and strides are TLS's template arrays
    FLOAT_FIELDS = ("s_max", "kscale", "sum_a2", "a1", "e_coef", "inv_sa", "e_rel", "inv_sa2")

    def __init__(self, templates):
        tp = templates
        ints = {k: [] for k in self.INT_FIELDS}
        floats = {k: [] for k in ("sum_a2", "a1", "e_coef", "inv_sa", "e_rel", "inv_sa2")}
        frags, squares, offsets = [], [], [0]
        for wi, (stride, ksteps) in enumerate(zip(tp.strides, ksteps_of(tp))):
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            sa, sa2 = power_of_two_scale(a), power_of_two_scale(a * a)
            frags.append(banded_fragments(a, int(stride), int(ksteps), sa))
            squares.append(banded_fragments(a * a, int(stride), int(ksteps), sa2))
            offsets.append(offsets[-1] + frags[-1].size)
            rel = (1 + U16) ** 2 - 1 + a.size * 2.0 ** -23 + (a.size + 2) * 2.0 ** -53
            for key, value in zip(self.INT_FIELDS, (ksteps, a.size)):
                ints[key].append(value)
            for key, value in zip(floats, (float(a @ a), float(np.abs(a).sum()),
                                           rel * float(np.abs(a).max()) + 2.0 ** -24 / sa, 1.0 / sa, rel, 1.0 / sa2)):
                floats[key].append(value)
        self.fields = {k: np.array(v, np.int32) for k, v in ints.items()}
        self.fields.update({k: np.array(v, np.float64) for k, v in floats.items()})
        self.fields["s_max"] = pruning.depth_limits(tp.widths, tp.depth_min)
        self.fields["kscale"] = np.asarray(tp.kscale, np.float64)
        self.bfrag, self.bfrag2 = np.concatenate(frags), np.concatenate(squares)
        self.b_off = np.array(offsets[:-1], np.int64)  # of a's fragments and of a^2's

    def sections(self) -> list:
        """(name, array) pairs: the fields in ``INT_FIELDS``, ``FLOAT_FIELDS``
        order (the kernel's), then the offsets and both fragment sets."""
        return [*((name, self.fields[name]) for name in (*self.INT_FIELDS, *self.FLOAT_FIELDS)),
                ("b_off", self.b_off), ("bfrag", self.bfrag), ("bfrag2", self.bfrag2)]


def ksteps_of(templates) -> np.ndarray:
    """k-steps of 16 samples per width: the template and the band's 7 further columns."""
    return -(-(templates.lengths + 7 * templates.strides) // 16)


def fold_shape(templates, n: int, tiles_per_job: int):
    """(listed shifts per width as int32, mp) on folds of ``n`` samples: mp,
    the float16 fold's length in halves, holds every tile of 128 shifts, the
    spare ones of a last job of ``tiles_per_job`` and a template past them."""
    from backends.scan_jobs import shift_counts

    n_shifts = shift_counts(templates.widths, templates.strides, n + templates.maxwidth, n)
    tiles = -(-n_shifts // TILE) + tiles_per_job - 1
    mp = int(np.max(tiles * TILE * templates.strides + 16 * ksteps_of(templates)))
    return n_shifts.astype(np.int32), mp + mp % 2


def shared_bytes(templates, n: int, mp: int, weighted: bool = False) -> int:
    """The kernel's dynamic shared memory: prefix sums of F and |u| (M + 1
    doubles each) and the float16 fold (``mp`` halves, ``fold_shape``'s), with
    ``weighted`` the float16 weights too (mp halves)."""
    return 16 * (n + templates.maxwidth + 1) + (4 if weighted else 2) * mp
