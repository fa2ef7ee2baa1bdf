"""What ``tensor_screen.cu`` reads of a template set: per width its sizes,
the depth filter's limit, the screen's allowance coefficients and the
template banded over 16 sub-shifts as float16 ``mma.sync`` A fragments.

The screen forms AR(i) = sum_j a_j u_(i+j) for 128 strided shifts of one width
at once: D[m, n] = sum_j A[m, j] B[j, n] with A[m, j] = a16[j - S m] and
B[j, n] = u16[s0 + 16 S n + j] (the fold's columns), so D[m, n] = AR(s0 +
S (16 n + m)). With u and a rounded to float16 after power-of-two scalings (u's
in the kernel, a's here), every product errs by at most a relative
(1 + 2^-11)^2 - 1 plus float16's subnormal steps, the fp32 accumulation by an
allowed ``ACCUMULATION`` relative per k-step (an assumption, 8x a truncation
of 2^-22 per k-step of 16 products: NVIDIA publishes no bound; more than the
L 2^-23 allowed before the band grew to 16 sub-shifts, which left the 7-sample
template 1.75x, not 8x), and the float64 reference sum by (L + 2) 2^-53,
so |AR - AR16| <= e_coef sum|u| + e_abs over the window's samples
(``e_coef``; ``e_abs``'s per-light-curve terms the kernel adds).
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
ACCUMULATION = 8 * 2.0 ** -22  # the fp32 accumulation's allowed error per k-step, relative to sum |a u|


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
    """A[m, j] = a[j - stride m] * scale (zero outside the template) as
    m16n8k16 A fragments: k-steps x 32 lanes x (a0, a1, a2, a3), each a half2
    (low half the smaller j). Lane (g, t) = (lane / 4, lane % 4) holds a0 =
    (A[g, 2t], A[g, 2t + 1]), a1 the same of row g + 8, a2 and a3 those of
    columns 2t + 8 and 2t + 9, of each k-step's 16 columns."""
    band = np.zeros((16, 16 * ksteps))
    for m in range(16):
        band[m, stride * m:stride * m + a.size] = a * scale
    bits = half_bits(band)
    lane = np.arange(32)
    g, t = lane >> 2, lane & 3
    cols = 16 * np.arange(ksteps)[:, None] + 2 * t[None, :]
    pairs = [bits[row, col] | (bits[row, col + 1] << 16) for col in (cols, cols + 8) for row in (g, g + 8)]
    return np.stack(pairs, axis=-1).ravel().astype(np.uint32)


class TensorTables:
    """Per width of a template set: ``fields`` (k-steps and length as int32;
    the depth filter's flux-sum limit, k per unit box, sum a^2, ||a||_1, the
    allowance's e_coef, 1 / a's scale, the relative allowance e_rel of one
    product sum, 1 / a^2's scale as float64) and the A fragments
    of a (``frag``) and of a^2 (``frag2``, for A2 with weights that differ)
    at offsets ``f_off`` (in fragments of 4 words); ``sections()`` for ``Staged``. What depends on the
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
            rel = (1 + U16) ** 2 - 1 + ksteps * ACCUMULATION + (a.size + 2) * 2.0 ** -53
            for key, value in zip(self.INT_FIELDS, (ksteps, a.size)):
                ints[key].append(value)
            for key, value in zip(floats, (float(a @ a), float(np.abs(a).sum()),
                                           rel * float(np.abs(a).max()) + 2.0 ** -24 / sa, 1.0 / sa, rel, 1.0 / sa2)):
                floats[key].append(value)
        self.fields = {k: np.array(v, np.int32) for k, v in ints.items()}
        self.fields.update({k: np.array(v, np.float64) for k, v in floats.items()})
        self.fields["s_max"] = pruning.depth_limits(tp.widths, tp.depth_min)
        self.fields["kscale"] = np.asarray(tp.kscale, np.float64)
        self.frag, self.frag2 = np.concatenate(frags), np.concatenate(squares)
        self.f_off = np.array(offsets[:-1], np.int64) // 4  # of a's fragments and of a^2's, in uint4

    def sections(self) -> list:
        """(name, array) pairs: the fields in ``INT_FIELDS``, ``FLOAT_FIELDS``
        order (the kernel's), then the offsets and both fragment sets."""
        return [*((name, self.fields[name]) for name in (*self.INT_FIELDS, *self.FLOAT_FIELDS)),
                ("f_off", self.f_off), ("frag", self.frag), ("frag2", self.frag2)]


def ksteps_of(templates) -> np.ndarray:
    """k-steps of 16 samples per width: the template and the band's 15 further rows."""
    return -(-(templates.lengths + 15 * templates.strides) // 16)


def fold_shape(templates, n: int, tiles_per_job: int):
    """(listed shifts per width as int32, mp) on folds of ``n`` samples: mp,
    the float16 fold's length in halves, holds every tile of 128 shifts, the
    spare ones of a last job of ``tiles_per_job`` and a template past them,
    in whole groups of 16 (``placed`` in tensor_screen.cu moves samples within one)."""
    from backends.scan_jobs import shift_counts

    n_shifts = shift_counts(templates.widths, templates.strides, n + templates.maxwidth, n)
    tiles = -(-n_shifts // TILE) + tiles_per_job - 1
    mp = int(np.max(tiles * TILE * templates.strides + 16 * ksteps_of(templates)))
    return n_shifts.astype(np.int32), -(-mp // 16) * 16


def shared_bytes(templates, n: int, mp: int, weighted: bool = False) -> int:
    """The kernel's dynamic shared memory: prefix sums of F (M + 1 doubles)
    and of |u| (M + 1 floats), each rounded up to four entries, and the
    float16 fold (``mp`` halves, ``fold_shape``'s), with ``weighted`` the
    float16 weights too (mp halves)."""
    m4 = -(-(n + templates.maxwidth + 1) // 4) * 4
    return 12 * m4 + (4 if weighted else 2) * mp
