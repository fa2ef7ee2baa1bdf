"""What ``tensor_screen.cu`` reads of a template set: per width its sizes,
the depth filter's limit, the screen's allowance coefficients and the
template banded over 16 sub-shifts as float16 and int8 ``mma.sync`` A
fragments.

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

Before the float16 products, int8 ones bound each job's gains at half the
k-steps (m16n8k32, 32 samples a k-step, exact int32 sums): a~ = s8 q_a (q_a =
rint(a / s8), s8 = max|a| / 127) against the fold's q = rint(u r8) (r8 =
127 / max|u|, the light curve's), so with su = 1 / r8
|AR - su sum a~ q| <= d8 sum_window |u| + su (1/2 + 2^-40) sum|a~| (``d8``
= max|a - a~| and (L + 2) 2^-52 max|a| for the float64 reference sum's
rounding and its own; ``a1q`` = sum|a~|).
"""

from __future__ import annotations

import math

import numpy as np

from backends import pruning

TILE = 128  # strided shifts per tile: 16 rows x 8 columns of one m16n8 product
U16 = 2.0 ** -11  # float16's unit roundoff
ACCUMULATION = 8 * 2.0 ** -22  # the fp32 accumulation's allowed error per k-step, relative to sum |a u|
INT8_TOP = 127  # the int8 gate's largest magnitude, of q_a and of q


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


def band(a, stride, columns) -> np.ndarray:
    """A[m, j] = a[j - stride m] (zero outside the template), 16 x ``columns``."""
    out = np.zeros((16, columns))
    for m in range(16):
        out[m, stride * m:stride * m + a.size] = a
    return out


def packed_fragments(bits, ksteps, per_word) -> np.ndarray:
    """m16n8k(8 per_word) A fragments of the 16-row matrix ``bits`` (element
    bit patterns, ``32 // per_word`` bits each): k-steps x 32 lanes x (a0,
    a1, a2, a3), each word ``per_word`` elements of one row, the lowest bits
    the smallest column. Lane (g, t) = (lane / 4, lane % 4) holds in a0 row g's
    columns per_word t .. per_word t + per_word - 1, in a1 the same of row
    g + 8, in a2 and a3 those 4 per_word columns on, of each k-step's
    8 per_word columns (PTX's layout for float16 k16 and int8 k32)."""
    lane, k = np.arange(32), 8 * per_word
    g, t = lane >> 2, lane & 3
    cols = k * np.arange(ksteps)[:, None] + per_word * t[None, :]
    words = [sum(bits[row, col + e] << (32 // per_word * e) for e in range(per_word))
             for col in (cols, cols + k // 2) for row in (g, g + 8)]
    return np.stack(words, axis=-1).ravel().astype(np.uint32)


def banded_fragments(a, stride, ksteps, scale) -> np.ndarray:
    """A[m, j] = a[j - stride m] * scale as m16n8k16 float16 A fragments
    (``packed_fragments``, two a word)."""
    return packed_fragments(half_bits(band(a * scale, stride, 16 * ksteps)), ksteps, 2)


def int8_fragments(q, stride, ksteps) -> np.ndarray:
    """A[m, j] = q[j - stride m] (integers of at most INT8_TOP) as m16n8k32
    int8 A fragments (``packed_fragments``, four a word)."""
    bits = band(q, stride, 32 * ksteps).astype(np.int64).astype(np.uint8).astype(np.uint32)
    return packed_fragments(bits, ksteps, 4)


def int8_template(a):
    """(q_a, s8) of a template: q_a = rint(a / s8) with s8 = max|a| / INT8_TOP."""
    s8 = float(np.abs(a).max()) / INT8_TOP or 1.0
    return np.rint(a / s8), s8


class TensorTables:
    """Per width of a template set: ``fields`` (k-steps and length as
    int32; the depth filter's flux-sum limit, k per unit box,
    sum a^2, ||a||_1, the allowance's e_coef, 1 / a's scale, the relative
    allowance e_rel of one product sum, 1 / a^2's scale, the int8 gate's s8,
    d8 and a1q as float64) and the A fragments of a (``frag``) and of a^2
    (``frag2``, for A2 with weights that differ) at offsets ``f_off``, of
    q_a (``frag8``) at ``f8_off`` (in fragments of 4 words); ``sections()``
    for ``Staged``. What depends on the light curve's N (the shifts listed,
    the folds' length) is ``fold_shape``'s."""

    INT_FIELDS = ("ksteps", "length")  # the widths and strides are TLS's template arrays
    FLOAT_FIELDS = ("s_max", "kscale", "sum_a2", "a1", "e_coef", "inv_sa", "e_rel", "inv_sa2", "s8", "d8", "a1q")

    def __init__(self, templates):
        tp = templates
        ints = {k: [] for k in self.INT_FIELDS}
        floats = {k: [] for k in ("sum_a2", "a1", "e_coef", "inv_sa", "e_rel", "inv_sa2", "s8", "d8", "a1q")}
        frags, squares, bytes8, offsets, offsets8 = [], [], [], [0], [0]
        for wi, (stride, ksteps) in enumerate(zip(tp.strides, ksteps_of(tp))):
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            sa, sa2 = power_of_two_scale(a), power_of_two_scale(a * a)
            qa, s8 = int8_template(a)
            frags.append(banded_fragments(a, int(stride), int(ksteps), sa))
            squares.append(banded_fragments(a * a, int(stride), int(ksteps), sa2))
            bytes8.append(int8_fragments(qa, int(stride), int8_ksteps(int(ksteps))))
            offsets.append(offsets[-1] + frags[-1].size)
            offsets8.append(offsets8[-1] + bytes8[-1].size)
            rel = (1 + U16) ** 2 - 1 + ksteps * ACCUMULATION + (a.size + 2) * 2.0 ** -53
            top = float(np.abs(a).max())
            for key, value in zip(self.INT_FIELDS, (ksteps, a.size)):
                ints[key].append(value)
            for key, value in zip(floats, (float(a @ a), float(np.abs(a).sum()),
                                           rel * top + 2.0 ** -24 / sa, 1.0 / sa, rel, 1.0 / sa2, s8,
                                           (float(np.abs(a - s8 * qa).max()) + (a.size + 2) * 2.0 ** -52 * top),
                                           float(np.abs(qa).sum()) * s8 * (1 + 2.0 ** -40))):
                floats[key].append(value)
        self.fields = {k: np.array(v, np.int32) for k, v in ints.items()}
        self.fields.update({k: np.array(v, np.float64) for k, v in floats.items()})
        self.fields["s_max"] = pruning.depth_limits(tp.widths, tp.depth_min)
        self.fields["kscale"] = np.asarray(tp.kscale, np.float64)
        self.frag, self.frag2, self.frag8 = np.concatenate(frags), np.concatenate(squares), np.concatenate(bytes8)
        self.f_off = np.array(offsets[:-1], np.int64) // 4  # of a's fragments and of a^2's, in uint4
        self.f8_off = np.array(offsets8[:-1], np.int64) // 4  # of the int8 fragments, in uint4

    def sections(self) -> list:
        """(name, array) pairs: the fields in ``INT_FIELDS``, ``FLOAT_FIELDS``
        order (the kernel's), then the offsets and fragment sets."""
        return [*((name, self.fields[name]) for name in (*self.INT_FIELDS, *self.FLOAT_FIELDS)),
                ("f_off", self.f_off), ("frag", self.frag), ("frag2", self.frag2), ("f8_off", self.f8_off),
                ("frag8", self.frag8)]


def ksteps_of(templates) -> np.ndarray:
    """k-steps of 16 samples per width: the template and the band's 15 further rows."""
    return -(-(templates.lengths + 15 * templates.strides) // 16)


def int8_ksteps(ksteps):
    """The int8 products' k-steps of 32 samples: half the float16 ones,
    rounded up (ceil(ceil(x / 16) / 2) = ceil(x / 32); the kernel's (K + 1) >> 1)."""
    return -(-ksteps // 2)


def int8_scale(u) -> float:
    """r8 = INT8_TOP / max|u| (1 for u all zero): the int8 fold q = rint(u r8)."""
    top = float(np.abs(u).max())
    return INT8_TOP / top if top > 0.0 else 1.0


def fold_shape(templates, n: int, tiles_per_job: int):
    """(listed shifts per width as int32, mp) on folds of ``n`` samples: mp,
    the float16 fold's length in halves (the int8 fold's in bytes), holds every
    tile of 128 shifts, the spare ones of a last job of ``tiles_per_job`` and a
    template past them (int8 k-steps: a float16 one more at most), in
    whole groups of 32 (tensor_screen.cu's ``placed`` moves samples within
    16, ``placed8`` the int8 copy's 16-byte chunks within pairs)."""
    from backends.scan_jobs import shift_counts

    n_shifts = shift_counts(templates.widths, templates.strides, n + templates.maxwidth, n)
    tiles = -(-n_shifts // TILE) + tiles_per_job - 1
    mp = int(np.max(tiles * TILE * templates.strides + 32 * int8_ksteps(ksteps_of(templates))))  # >= 16 k-steps
    return n_shifts.astype(np.int32), -(-mp // 32) * 32


def shared_bytes(templates, n: int, mp: int) -> int:
    """The kernel's dynamic shared memory: prefix sums of F (M + 1 doubles)
    and of |u| (M + 1 floats), each rounded up to four entries, the float16
    fold (``mp`` halves, ``fold_shape``'s), then with weights that differ the
    float16 weights (mp halves), with equal weights the int8 fold and its
    copy for the even strides (mp bytes each)."""
    m4 = -(-(n + templates.maxwidth + 1) // 4) * 4
    return 12 * m4 + 4 * mp
