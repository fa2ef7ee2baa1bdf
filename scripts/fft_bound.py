"""A proven float32 error bound for ``fft_scan.cu``'s transforms (issue 12's
FFT lead; not a backend).

Each radix-R butterfly of ``fft_scan.cu`` (``small_dft``, ``composite_dft``,
with the constants parsed from the source) is replayed on linear forms of its
2R real inputs: every value carries its exact coefficients c and a bound e
with |computed - c.v| <= e.|v| for every input v, each float32 rounding
(add, subtract, multiply by a constant that is not 0, +-1 or +-1/2) adding
u32 of the value's magnitude. ``nvcc`` may contract a multiply and an add
into an FMA, which rounds once instead of twice: the bound still holds. The
butterfly's error is then at most ||G||_2 ||v||_2 (G: the rows e), and a
Stockham pass, twiddles included, errs by at most eta ||S|| ||x||_2 with

    eta = tau + ||G||_2 (1 + tau) / sqrt(R),   tau = sqrt(2) gamma_2 (1 + mu) + mu

(mu: the complex64 twiddle table's error). Over the passes the transform's
normwise relative error is at most prod(1 + eta) - 1 (Higham, Accuracy and
Stability of Numerical Algorithms, 2nd ed., 24.1, whose radix-2 proof this
follows pass by pass). ``error_scale`` turns that into E / (||v||_2
||a||_1) for the fused kernel's AR: its forward and inverse transforms, the
float32 fold, the complex64 template spectra and their product.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("fft_scan.cu")
U32 = 2.0 ** -24
U64 = 2.0 ** -53
EXACT_FACTORS = (0.0, 1.0, -1.0, 0.5, -0.5)  # products by these round nothing


def gamma(n, u=U32) -> float:
    """Higham's gamma_n = n u / (1 - n u) for unit roundoff ``u``."""
    return n * u / (1 - n * u)


class Rounded:
    """A float32 value computed from the butterfly's inputs: exact
    coefficients ``c`` and the bound ``e`` on its rounding error."""

    def __init__(self, c, e):
        self.c, self.e = np.asarray(c, float), np.asarray(e, float)

    def __add__(self, other):
        c = self.c + other.c
        return Rounded(c, (self.e + other.e) * (1 + U32) + U32 * np.abs(c))

    def __neg__(self):
        return Rounded(-self.c, self.e)

    def __sub__(self, other):
        return self + -other

    def times(self, stored, exact):
        """The value times the constant ``stored`` (float32) meant as ``exact``."""
        error = abs(stored - exact) * np.abs(self.c)
        if stored in EXACT_FACTORS:
            return Rounded(exact * self.c, abs(stored) * self.e + error)
        return Rounded(exact * self.c, abs(stored) * self.e * (1 + U32) + error + U32 * abs(stored) * np.abs(self.c))


class Complex:
    def __init__(self, x: Rounded, y: Rounded):
        self.x, self.y = x, y

    def __add__(self, o):
        return Complex(self.x + o.x, self.y + o.y)

    def __sub__(self, o):
        return Complex(self.x - o.x, self.y - o.y)

    def times_i(self):
        return Complex(-self.y, self.x)

    def times(self, stored, exact):
        """cmul by the constant ``stored`` (complex, float32 parts) meant as ``exact``."""
        (sx, sy), (ex, ey) = stored, exact
        return Complex(self.x.times(sx, ex) - self.y.times(sy, ey), self.x.times(sy, ey) + self.y.times(sx, ex))


@functools.lru_cache(maxsize=None)
def source_constants() -> dict:
    """``fft_scan.cu``'s float32 constants: small_dft's by name, unit_root's by (R, e)."""
    text = SOURCE.read_text()
    named = {name: np.float32(value) for name, value in
             re.findall(r"\b(c|s|c1|s1|c2|s2) = (-?[\d.]+)f", text)}
    roots = {(int(r), int(e)): (np.float32(x), np.float32(y)) for r, e, x, y in
             re.findall(r"R == (\d+) && e == (\d+)\) return make_float2\((-?[\d.]+)f, (-?[\d.]+)f\)", text)}
    return {"named": named, "roots": roots}


def _first_factor(r) -> int:
    return {6: 3, 8: 4, 9: 3, 10: 5, 12: 4, 15: 5, 16: 4, 18: 9}.get(r, r)


def _small_dft(r, v):
    k = source_constants()["named"]
    if r == 2:
        return [v[0] + v[1], v[0] - v[1]]
    if r == 4:
        s02, d02 = v[0] + v[2], v[0] - v[2]
        s13, d13 = v[1] + v[3], (v[1] - v[3]).times_i()
        return [s02 + s13, d02 + d13, s02 - s13, d02 - d13]
    if r == 3:
        c, s = k["c"], k["s"]
        ce, se = -0.5, math.sin(2 * math.pi / 3)
        a, b, d = v
        total, dif = b + d, b - d
        m = Complex(a.x + total.x.times(c, ce), a.y + total.y.times(c, ce))
        rr = Complex(dif.y.times(-s, -se), dif.x.times(s, se))
        return [a + total, m + rr, m - rr]
    c1, s1, c2, s2 = k["c1"], k["s1"], k["c2"], k["s2"]
    e1, f1 = math.cos(2 * math.pi / 5), math.sin(2 * math.pi / 5)
    e2, f2 = math.cos(4 * math.pi / 5), math.sin(4 * math.pi / 5)
    a = v[0]
    s14, d14, s23, d23 = v[1] + v[4], v[1] - v[4], v[2] + v[3], v[2] - v[3]
    m1 = Complex(a.x + s14.x.times(c1, e1) + s23.x.times(c2, e2), a.y + s14.y.times(c1, e1) + s23.y.times(c2, e2))
    m2 = Complex(a.x + s14.x.times(c2, e2) + s23.x.times(c1, e1), a.y + s14.y.times(c2, e2) + s23.y.times(c1, e1))
    r1 = Complex(d14.x.times(s1, f1) + d23.x.times(s2, f2), d14.y.times(s1, f1) + d23.y.times(s2, f2)).times_i()
    r2 = Complex(d14.x.times(s2, f2) - d23.x.times(s1, f1), d14.y.times(s2, f2) - d23.y.times(s1, f1)).times_i()
    return [a + (s14 + s23), m1 + r1, m2 + r2, m2 - r2, m1 - r1]


def dft(r, v) -> list:
    """``fft_scan.cu``'s dft<R> replayed on ``v`` (R ``Complex`` values)."""
    q = _first_factor(r)
    if q == r:
        return _small_dft(r, v)
    s = r // q
    roots = source_constants()["roots"]
    d = [dft(q, [v[t + s * j] for j in range(q)]) for t in range(s)]
    out = [None] * r
    for p in range(q):
        e = []
        for t in range(s):
            if t * p:
                angle = 2 * math.pi * t * p / r
                e.append(d[t][p].times(roots[(r, t * p)], (math.cos(angle), math.sin(angle))))
            else:
                e.append(d[t][p])
        for t, y in enumerate(dft(s, e)):
            out[p + q * t] = y
    return out


def butterfly(r):
    """(exact map, error matrix G) of the radix-``r`` butterfly, over the 2r
    real inputs (x0, y0, x1, y1, ...) and outputs."""
    eye = np.eye(2 * r)
    v = [Complex(Rounded(eye[2 * j], np.zeros(2 * r)), Rounded(eye[2 * j + 1], np.zeros(2 * r))) for j in range(r)]
    out = dft(r, v)
    rows = [part for y in out for part in (y.x, y.y)]
    return np.array([x.c for x in rows]), np.array([x.e for x in rows])


@functools.lru_cache(maxsize=None)
def pass_error(r) -> float:
    """eta of one radix-``r`` Stockham pass, twiddles included."""
    _, g = butterfly(r)
    mu = U32 + 1e-15  # complex64 rounding of the float64 twiddle table
    tau = math.sqrt(2) * gamma(2) * (1 + mu) + mu
    return tau + np.linalg.norm(g, 2) * (1 + 1e-12) * (1 + tau) / math.sqrt(r)


def transform_error(radices) -> float:
    """Normwise relative error bound of a transform by ``radices``' passes."""
    return math.prod(1 + pass_error(r) for r in radices) - 1


def error_scale(radices) -> float:
    """E / (||v||_2 ||a||_1) for ``fft_scan.cu``'s AR: v rounded to float32
    (u32); its forward transform (``transform_error``, times sqrt(2): the
    kernel keeps the spectrum's first half and mirrors it, so its error counts
    twice); the complex64 template spectra (u32, plus the float64 rfft's own,
    below 1e-13) and their product with U packed into Z (2 gamma_3); the
    pair's inverse transform (``transform_error``); second-order terms within
    the factor 1 + 1e-3. Each term is relative to ||U||_2 ||A||_inf <=
    sqrt(M) ||v||_2 ||a||_1, and the inverse transform's 1 / M and sqrt(M)
    turn it into a bound on every AR."""
    eps = transform_error(radices)
    return (2 * U32 + 1e-13 + (math.sqrt(2) + 1) * eps + 2 * gamma(3)) * (1 + 1e-3)
