"""Certified bounds for the exact pruned chi2 scan (``../shared/reference/exact_pruning.md``).

A shift i of a template a (length L) with box depth k (scaled) has gain
G = 2 k AR - k^2 A2, AR = sum_j a_j u_{i+j}, A2 = sum_j a_j^2 W_{i+j}, u = (1 - F) W.
Split a into K contiguous pieces p (n_p samples, mean c_p). Because
sum_{j in p} (a_j - c_p) = 0, the data's piece mean can be subtracted too, and
Cauchy-Schwarz gives

    AR <= sum_p c_p S_p + rho_K sqrt(sum_p [Q_p - S_p^2 / n_p]),

rho_K = ||a - pc_K(a)||_2, S_p and Q_p the sums of u and u^2 over the piece
(prefix sums: O(K) per shift). A2 is bounded below the same way with (a^2, W),
or is exactly W0 sum a^2 for uniform weights. A shift is skipped only when
its upper bound on G, plus a rounding allowance, is below T, a gain already
achieved by a real shift of the period (the seed): it can then be neither
the best gain nor tie with it, so the first best fit is found unchanged.

Rounding (float64, unit roundoff 2^-53, ``eps`` = 2^-52 below): with
g = (M + 16) eps on a patched fold of M samples, every prefix sum of x is off
by at most g sum|x| and a window sum by 2g sum|x| + eps|.|, so per period
(U1 = sum|u|, U2 = sum u^2, W1 = sum W, W2 = sum W^2 over the patched fold):

- sum_p c_p S_p is off by at most C (4 g U1), C = sum_p c_p;
- sum_p (Q_p - S_p^2/n_p) by at most EV = K (4 g U2 + 7 g U1^2), added inside
  the square root (and subtracted for the A2 lower bound, with W1, W2);
- the exact evaluation the brute force would do is off by at most
  g amax U1 in AR and g amax^2 W1 in A2 (any summation order);
- forming the bound and the gain costs a few roundings, covered by a relative
  pad of 1e-12 (2k|UB_AR| + k^2 LB_A2 + T), far above 8 eps.

Each allowance is below 1e-9 of the quantity it pads, where the bound's own
slack is ~10 %: the pads cost no pruning. ``debug`` mode checks every skipped
shift's exact gain against its padded bound (tests use it).

With uniform weights W = w, ``pruned``'s global layout takes the one-piece
bound's window sum of u for a template as long as its box (L = d) from the box's
flux sum s, already loaded for the depth filter, as S' = w (d - s) rather than
from pu. S' is off from the sum of the stored u by at most
w (2 g F1 + eps |s|) + 2 eps |w (d - s)| + 2 eps U1 (s's window error, two
roundings, u's own rounding), with F1 = sum |f| <= M + U1 / w: by less than
half of e_s = 5 g (w M + 2 U1). Hence, doubled as above, the allowances
2 |c_1| e_s on the mean term and 2 e_s (2 |S'| + e_s) / L on the centred
squares, per shift (a per-period one, through |S| <= U1, would pad short
templates' squares by up to ~10 %). Being w M rather than U1, these two are
far larger than the others, still far below the bound's slack: on the H100
the TESS-like and 78-day searches queued 0.002 % and 0.008 % more shifts
for the K-piece bound than with pu, whose survivors were the same.

The K-piece linear bound (``cpu``'s fine stage and ``pruned``'s global layout;
``pruned``'s shared-memory layout uses the constant pieces above). Approximate
a on piece p by the line l_j = c_p + s_p (j - m_p)
(piece mean c_p, least-squares slope s_p, centre index m_p); the residual
e = a - l is orthogonal to 1 and to j on every piece, hence over the window,
so the data's least-squares line can be subtracted:

    AR = sum_p (c_p S_p + s_p M_p) + sum_j e_j u_{i+j}
      <= sum_p (c_p S_p + s_p M_p) + rho_L sqrt(Q - S^2 / L - M^2 / T)

with M_p = sum_{j in p} (j - m_p) u_{i+j}, S, Q, M the window's sums (M about
its centre), T = L (L^2 - 1) / 12, rho_L = ||e||_2. M_p and M come from prefix
sums of (t - M/2) u_t (t the fold index) as a window difference minus
(i + m_p - M/2) S_p: off by at most 3 g M U1. Hence, doubled as above, the
allowances 4 g U1 sum_p |c_p| + 4 g M U1 sum_p |s_p| on the mean terms and
4 g U2 + 7 g U1^2 + 6 g M U1 sqrt(U2 / T) + 9 (g M U1)^2 / T inside the square
root (|M| <= sqrt(T U2)). The float constants define l; the defects
|sum e_j| and |sum e_j (j - jbar)| of its residual (rounding, ~1e-12) add
|sum e| U1 / L + |sum e (j - jbar)| sqrt(U2 / T). These grow with M^2: up to
~3 % of the bound's slack for 140-sample templates on a 55,000-sample fold,
below 1e-3 from 1,000 samples on. Same load count as the constant pieces
(prefix sums of u and of (t - M/2) u at the boundaries); at K = 6 the residual
norm is 3.5x smaller than 8 constant pieces' on K2-size templates and 1.4-1.9x
smaller than 16 on TESS-size ones.

The one-piece bound's k (``pruned``, and ``cpu`` with the same pads): the
exact stage's k = RN(RN(1 - RN(s / d)) kscale) costs a division, a chain of
seven float64 operations per shift; ``pruned`` takes k' = RN(kscale - s
RN(RN(1 / d) kscale)), one fma. With x = s / d and the box's depth
D = 1 - x, k' is within kscale (2 |x| + D) u + O(u^2) of kscale D and k
within kscale (|x| + 2 D) u + O(u^2) (u = 2^-53), so
|k' - k| <= 3.01 u kscale (|x| + D), at most
3.01 u (1 / D + 2) of k: 3.4e-10 for boxes at least COARSE_DEPTH (1 ppm)
deep, which is all that the one-piece bound takes (shallower ones go on to
the K-piece bound, whose k is the exact stage's; ``pruned`` tests
k' >= COARSE_DEPTH kscale, ``cpu`` the box itself: either way D is within
1e-9 of COARSE_DEPTH or above). G(k) = 2k UB - k^2 LB with
k = k'(1 + e), |e| <= e0, is at most G(k') + e0 (2k'|UB| + 2k'^2 LB); so
the one-piece bound's pad is COARSE_PAD = 1e-9 >= PAD + 2 e0, the same in
``cpu`` so that both queue the same shifts. At 1e-9 it still costs no pruning.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

EPS = 2.0 ** -52
PAD = 1e-12  # relative pad for the few roundings of forming a bound or a gain
COARSE_DEPTH = 1e-6  # boxes shallower than this skip the one-piece bound (module docstring)
COARSE_PAD = 1e-9  # the one-piece bound's pad: PAD and its k's error at depths from COARSE_DEPTH
RHO_INFLATE = 1.0 + 1e-12  # rho and its sums are computed in float64 once per template
PRUNE_MIN_LENGTH = 32  # shorter templates: the exact dot product is cheaper than a bound
FINE_MIN_LENGTH = 32  # shorter: the exact dot product is cheaper than the K-piece bound
BREAKPOINT_GRID = 128  # candidate piece boundaries per template (DP cost K * grid^2)
LINE_PIECES = 6  # pieces of the linear bound (cpu's fine stage): K2- to 78-day-size templates

# Work counters of one search, in the order the scans count them (the first
# and seventh on the host, ``host_work``): shifts visited, passing the depth
# filter, surviving the one-piece bound, surviving the K-piece bound (linear
# pieces; pruned's shared layout: constant pieces) (= exact dot products beside
# the seeds), the seeds' exact dot products, multiply-adds of all exact dot
# products, multiply-adds brute force would spend (every visited shift), and
# bound violations (debug mode).
COUNTERS = ("shifts", "depth_pass", "coarse_pass", "fine_pass", "seed_dots",
            "exact_macs", "brute_force_macs", "bound_violations")


class BoundViolation(AssertionError):
    """Debug mode found a skipped shift whose exact gain beat its bound."""


def host_work(plan, lo, hi) -> dict:
    """The counters the host knows from the width windows [lo, hi): shifts
    visited and brute force's multiply-adds (a GPU backend counts them while
    the device runs). The model grid's own windows, which the light curves of
    one template cache share, are counted once (``Plan.kept_with_windows``):
    ~0.1 ms of the host's, per K2-like light curve."""
    from backends.scan_jobs import shift_counts, window_sum

    tp = plan.templates
    m, n = plan.lc.size + tp.maxwidth, plan.lc.size

    def counted():
        return {"shifts": window_sum(shift_counts(tp.widths, tp.strides, m, n), lo, hi),
                "brute_force_macs": window_sum(shift_counts(tp.widths, tp.strides, m) * tp.lengths, lo, hi)}

    return dict(plan.kept_with_windows(lo, hi, "host work", counted))


def add_work(work, device_counts, known: dict, debug: bool, names=COUNTERS) -> None:
    """Add a batch's counters to ``work`` (a backend's ``WorkCounts``): the
    scan's own (``names``, in the kernel's order), then ``known``
    (``host_work``) in place of the host's. Raises ``BoundViolation`` in debug
    mode when a skipped shift beat its bound."""
    counts = {**dict(zip(names, (int(v) for v in device_counts))), **known}
    for name, value in counts.items():
        work[name] += value
    if debug and counts["bound_violations"]:
        raise BoundViolation(f"{counts['bound_violations']} skipped shift(s) beat their bound")


def work_summary(work, names=None) -> dict:
    """The counters ``names`` (by default those ``work`` holds: a backend's
    own, ``add_work``'s) plus the fraction of brute force's multiply-adds spent."""
    out = {name: int(work.get(name, 0)) for name in (work if names is None else names)}
    brute = out.get("brute_force_macs", 0)
    out["fraction_of_brute_force"] = out.get("exact_macs", 0) / brute if brute else 0.0
    return out


def pieces_for(maxwidth: int) -> int:
    """Pieces of the fine bound: 8 for K2-size templates, 16 beyond (TESS)."""
    return 8 if maxwidth < 1000 else 16


@numba.njit(cache=True)
def _segment(a, k_max, grid, linear):
    """Split of ``a`` into at most ``k_max`` contiguous pieces with boundaries
    on ``grid`` (ascending, from 0 to len(a)) that minimises the sum of squared
    residuals of the pieces' constant (or, ``linear``, least-squares line)
    approximations; returns the boundaries."""
    g = grid.size
    c1 = np.zeros(a.size + 1)  # prefix sums of a, a^2, j a, j, j^2
    c2 = np.zeros(a.size + 1)
    cj = np.zeros(a.size + 1)
    j1 = np.zeros(a.size + 1)
    j2 = np.zeros(a.size + 1)
    for j in range(a.size):
        c1[j + 1] = c1[j] + a[j]
        c2[j + 1] = c2[j] + a[j] * a[j]
        cj[j + 1] = cj[j] + j * a[j]
        j1[j + 1] = j1[j] + j
        j2[j + 1] = j2[j] + j * j
    k = min(k_max, g - 1)
    cost = np.full((k + 1, g), np.inf)
    back = np.zeros((k + 1, g), np.int64)
    cost[0, 0] = 0.0
    for p in range(1, k + 1):
        for e in range(1, g):
            for s in range(e):
                if cost[p - 1, s] == np.inf:
                    continue
                b0, b1 = grid[s], grid[e]
                n = b1 - b0
                s1 = c1[b1] - c1[b0]
                sse = (c2[b1] - c2[b0]) - s1 * s1 / n
                if linear:  # minus the least-squares slope's share
                    sj = j1[b1] - j1[b0]
                    t = (j2[b1] - j2[b0]) - sj * sj / n
                    if t > 0.0:
                        sse -= ((cj[b1] - cj[b0]) - sj * s1 / n) ** 2 / t
                total = cost[p - 1, s] + max(sse, 0.0)
                if total < cost[p, e]:
                    cost[p, e] = total
                    back[p, e] = s
    bounds = np.empty(k + 1, np.int64)
    e = g - 1
    for p in range(k, 0, -1):
        bounds[p] = grid[e]
        e = back[p, e]
    bounds[0] = 0
    return bounds


def segment(a: np.ndarray, k_max: int, linear: bool = False) -> np.ndarray:
    """Piece boundaries (0 = b_0 < ... < b_K = len(a)) of the SSE-optimal
    K-piece constant (or ``linear``) approximation of ``a``, boundaries on a
    grid of at most ``BREAKPOINT_GRID`` positions (any split keeps the bounds valid)."""
    grid = np.unique(np.linspace(0, a.size, min(a.size, BREAKPOINT_GRID) + 1).astype(np.int64))
    return _segment(np.ascontiguousarray(a, np.float64), k_max, grid, linear)


def _piece_terms(x, bounds):
    """(piece means, rho = ||x - piecewise mean||_2 inflated, sum of means)."""
    means = np.array([x[b0:b1].mean() for b0, b1 in zip(bounds[:-1], bounds[1:])])
    rho = float(np.sqrt(sum(((x[b0:b1] - c) ** 2).sum()
                            for c, b0, b1 in zip(means, bounds[:-1], bounds[1:]))))
    return means, rho * RHO_INFLATE


def _line_terms(a, bounds):
    """The K-piece linear approximation l of ``a`` (per piece its mean c_p at
    the piece's centre index m_p and its least-squares slope), with bounds on
    ||a - l||_2 and on the residual's defects |sum e_j|, |sum e_j (j - jbar)|
    (zero in exact arithmetic; the float constants define l, and the rounding
    of e_j = a_j - l_j in float64 is bounded element-wise by 3 eps (|a_j| + |l_j|)):
    (c, slope, centre, rho, defects)."""
    j = np.arange(a.size, dtype=np.float64)
    centre = np.array([(b0 + b1 - 1) / 2 for b0, b1 in zip(bounds[:-1], bounds[1:])])
    c = np.array([a[b0:b1].mean() for b0, b1 in zip(bounds[:-1], bounds[1:])])
    slope = np.array([np.sum((j[b0:b1] - m) * (a[b0:b1] - cp)) / np.sum((j[b0:b1] - m) ** 2)
                      if b1 - b0 > 1 else 0.0
                      for cp, m, b0, b1 in zip(c, centre, bounds[:-1], bounds[1:])])
    piece = np.repeat(np.arange(c.size), np.diff(bounds))
    line = c[piece] + slope[piece] * (j - centre[piece])
    e = a - line
    rounding = 3 * EPS * (np.abs(a) + np.abs(line))
    jc = j - (a.size - 1) / 2
    defects = (abs(math.fsum(e)) + rounding.sum(),
               abs(math.fsum(e * jc)) + EPS * np.sum(np.abs(e * jc)) + np.sum(rounding * np.abs(jc)))
    rho = math.sqrt(math.fsum(e * e)) + math.sqrt(math.fsum(rounding * rounding))
    return c, slope, centre, rho * RHO_INFLATE, defects


@dataclass(frozen=True)
class PieceTables:
    """Per template width, the coarse (K = 1) and fine (K pieces) bounds'
    constants, padded to ``k_max`` pieces. Piece p of width wi spans template
    samples [bounds[wi, p], bounds[wi, p + 1]); unused pieces are empty
    (bounds repeat, c = 0)."""

    k_max: int
    n_pieces: np.ndarray  # int32 (widths,)
    bounds: np.ndarray  # int32 (widths, k_max + 1)
    inv_n: np.ndarray  # float64 (widths, k_max): 1 / piece length (0 for unused pieces)
    c: np.ndarray  # float64 (widths, k_max): piece means of a
    c2: np.ndarray  # float64 (widths, k_max): piece means of a^2
    rho: np.ndarray  # float64 (widths, 2): [K = 1, K pieces] residual norms of a
    rho2: np.ndarray  # float64 (widths, 2): the same for a^2
    mean: np.ndarray  # float64 (widths, 2): [mean a, mean a^2] (K = 1 piece)
    sum_a2: np.ndarray  # float64 (widths,)
    amax: np.ndarray  # float64 (widths,)
    sum_c: np.ndarray  # float64 (widths, 2): sum of c and of c2 over the pieces (allowances)
    # the K-piece linear bound of AR (``cpu``), padded to k_lines pieces the same way
    k_lines: int
    line_pieces: np.ndarray  # int32 (widths,)
    line_bounds: np.ndarray  # int32 (widths, k_lines + 1)
    line_c: np.ndarray  # float64 (widths, k_lines): piece means of a (the lines at the centres)
    line_slope: np.ndarray  # float64 (widths, k_lines): least-squares slopes per sample
    line_centre: np.ndarray  # float64 (widths, k_lines): centre index of each piece
    line_rho: np.ndarray  # float64 (widths,): ||a - l||_2, inflated
    line_defects: np.ndarray  # float64 (widths, 2): |sum e_j|, |sum e_j (j - jbar)|, bounded

    @classmethod
    def build(cls, templates, k_max: int | None = None, k_lines: int = LINE_PIECES) -> "PieceTables":
        k_max = k_max or pieces_for(int(templates.maxwidth))
        n_t = templates.widths.size
        n_pieces = np.zeros(n_t, np.int32)
        bounds = np.zeros((n_t, k_max + 1), np.int32)
        c = np.zeros((n_t, k_max))
        c2 = np.zeros((n_t, k_max))
        rho = np.zeros((n_t, 2))
        rho2 = np.zeros((n_t, 2))
        mean = np.zeros((n_t, 2))
        for wi in range(n_t):
            a = templates.a[templates.offsets[wi]:templates.offsets[wi + 1]]
            b = segment(a, k_max)
            k = b.size - 1
            n_pieces[wi] = k
            bounds[wi, :k + 1] = b
            bounds[wi, k + 1:] = b[-1]
            c[wi, :k], rho[wi, 1] = _piece_terms(a, b)
            c2[wi, :k], rho2[wi, 1] = _piece_terms(a * a, b)
            whole = np.array([0, a.size])
            (mean[wi, 0],), rho[wi, 0] = _piece_terms(a, whole)
            (mean[wi, 1],), rho2[wi, 0] = _piece_terms(a * a, whole)
        sum_a2 = np.array([np.sum(templates.a[o0:o1] ** 2) for o0, o1 in
                           zip(templates.offsets[:-1], templates.offsets[1:])])
        amax = np.array([np.max(np.abs(templates.a[o0:o1])) for o0, o1 in
                         zip(templates.offsets[:-1], templates.offsets[1:])])
        lengths = np.diff(bounds, axis=1)
        inv_n = np.where(lengths > 0, 1.0 / np.maximum(lengths, 1), 0.0)
        return cls(k_max, n_pieces, bounds, inv_n, c, c2, rho, rho2, mean, sum_a2, amax,
                   np.stack([c.sum(axis=1), c2.sum(axis=1)], axis=1),
                   k_lines, *_line_tables(templates, k_lines))


def _line_tables(templates, k_lines: int) -> tuple:
    """The ``line_*`` fields of ``PieceTables``: per width the SSE-optimal
    K-piece linear approximation of its template."""
    n_t = templates.widths.size
    pieces = np.zeros(n_t, np.int32)
    bounds = np.zeros((n_t, k_lines + 1), np.int32)
    c, slope, centre = np.zeros((n_t, k_lines)), np.zeros((n_t, k_lines)), np.zeros((n_t, k_lines))
    rho, defects = np.zeros(n_t), np.zeros((n_t, 2))
    for wi in range(n_t):
        a = templates.a[templates.offsets[wi]:templates.offsets[wi + 1]]
        b = segment(a, k_lines, linear=True)
        k = b.size - 1
        pieces[wi] = k
        bounds[wi, :k + 1] = b
        bounds[wi, k + 1:] = b[-1]
        c[wi, :k], slope[wi, :k], centre[wi, :k], rho[wi], defects[wi] = _line_terms(a, b)
    return pieces, bounds, c, slope, centre, rho, defects


def rho_q(rho, pad: float) -> np.ndarray:
    """``pruned``'s table of (2 (1 + pad) rho)^2 for Cauchy-Schwarz factors
    rho: its kernels test a bound's square-root term k 2 (1 + pad) rho sqrt(V)
    against R as k^2 q V against R^2. ``pad``: the bound's (COARSE_PAD for the
    one-piece bound, tuning's PAD for the K-piece ones)."""
    return (2.0 * (1.0 + pad) * np.asarray(rho, np.float64)) ** 2


def depth_limits(widths, depth_min: float) -> np.ndarray:
    """Per width d, the largest window flux sum s whose box 1 - s / d (IEEE
    division and subtraction, as every backend rounds it) exceeds depth_min.
    Both roundings are monotone, so the depth filter is exactly s <= limit:
    ``pruned`` tests shifts and searches its seeds with no division."""
    d = np.asarray(widths, np.float64)
    passes = lambda x: 1.0 - x / d > depth_min  # noqa: E731
    s = d * (1.0 - depth_min)
    while not (ok := passes(s)).all():
        s = np.where(ok, s, np.nextafter(s, -np.inf))
    while (up := passes(np.nextafter(s, np.inf))).any():
        s = np.where(up, np.nextafter(s, np.inf), s)
    return s


def tuning(m: int, prune_min: int = PRUNE_MIN_LENGTH, fine_min: int = FINE_MIN_LENGTH) -> tuple:
    """(g, PAD, prune_min, fine_min, COARSE_PAD, COARSE_DEPTH) for a patched fold of M samples,
    g = (M + 16) eps (module docstring): templates shorter than ``prune_min``
    skip the bounds, shorter than ``fine_min`` the K-piece bound (a template
    that skips the bounds skips it too: fine_min is at least prune_min; any
    values are exact, they only move work between stages). Passed to compiled
    scans as an argument, so that their on-disk caches never hold stale constants
    (``pruned``'s kernels take the last two as defines, which key their cache)."""
    return (float((m + 16) * EPS), PAD, int(prune_min), int(max(fine_min, prune_min)), COARSE_PAD, COARSE_DEPTH)
