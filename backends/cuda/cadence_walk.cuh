// The fold order of a light curve on a regular cadence grid by
// transitleastsquares 2.0.4's three-gap walk (core_fused.fold_walk_into with
// its certificate, _walk_certified), one thread per period: O(G) steps with
// no sort. Where the certificate does not prove that the walk order is the
// stable (phase, index) order, the period is left to the bucket sort.
//
// The grid (core_fused.regular_grid, host): slot g of G holds sample gp[g]
// (or -1), sample i sits in slot[i]; t_i = t_ref + slot[i] delta + e_i with
// |e_i| <= emax. Phases are fold_phase's (tls_common.cuh), whose rounding
// (2 eps |t| / P) lies within the certificate's 8 eps |t| / P.
#pragma once

#define WALK_PHASE_EPS 2.220446049250313e-16

struct CadenceGrid {
    const int *gp, *slot;
    int G;
    double delta, t_ref, emax;
};

__device__ __forceinline__ double grid_phase(double x) { return x - floor(x); }

// (a, b): the denominators of the best lower / upper rational approximations
// of alpha with denominator < G (core_fused._three_gap_steps).
__device__ void three_gap_steps(long long G, double alpha, long long &a, long long &b)
{
    long long pl = 0, ql = 1, pu = 1, qu = 1;
    for (;;) {
        if ((double)(pl + pu) <= alpha * (double)(ql + qu)) {
            const double den = (double)pu - alpha * (double)qu;
            long long k = G;
            if (den > 0.0) {
                const double r = (alpha * (double)ql - (double)pl) / den;
                k = r >= (double)G ? G : max(1LL, (long long)r);
            }
            k = min(k, (G - 1 - ql) / qu);
            if (k < 1) break;
            pl += k * pu;
            ql += k * qu;
        } else {
            const double den = alpha * (double)ql - (double)pl;
            long long k = G;
            if (den > 0.0) {
                const double r = ((double)pu - alpha * (double)qu) / den;
                k = r >= (double)G ? G : max(1LL, (long long)r);
            }
            k = min(k, (G - 1 - qu) / ql);
            if (k < 1) break;
            pu += k * pl;
            qu += k * ql;
        }
    }
    a = ql;
    b = qu;
}

// Whether the walk with steps (a, b) provably visits the samples in their
// stable phase order (core_fused._walk_certified).
__device__ bool walk_certified(double period, const CadenceGrid &c, double alpha, long long a, long long b)
{
    const double G = (double)c.G;
    const double dev = (c.emax + 8.0 * WALK_PHASE_EPS * (fabs(c.t_ref) + G * c.delta + c.emax)) / period
                       + WALK_PHASE_EPS;
    const double A = grid_phase((double)a * alpha);
    const double B = 1.0 - grid_phase((double)b * alpha);
    const double d_a = A <= 0.5 ? A : A - 1.0, d_b = B <= 0.5 ? B : B - 1.0;
    const double s = A + B - 1.0;
    const double d_ab = s > 0.5 ? s - 1.0 : s < -0.5 ? s + 1.0 : s;
    const double twice = 2.0 * dev;
    if (!(d_a > twice && d_b > twice && d_ab > twice)) return false;
    const double W = (G - (double)a) * d_a + (G - (double)b) * d_b + ((double)(a + b) - G) * d_ab;
    return fabs(W - 1.0) <= 0.25;
}

// order[0 .. n) := the stable phase order of the n samples at ``period`` by
// the walk (buf: n ints of scratch); false (order unspecified) where the walk
// is not certified, as core_fused.fold_walk_into's certified path decides.
__device__ bool walk_order(const double *t, int n, double period, const CadenceGrid &c, int *buf, int *order)
{
    const int G = c.G;
    if (n < 2 || G < 2) return false;
    const double alpha = grid_phase(c.delta / period);
    if (!(alpha > 0.0)) return false;
    long long a, b;
    three_gap_steps(G, alpha, a, b);
    if (a < 1 || b < 1 || a >= G || b >= G || a + b < G) return false;
    if (!walk_certified(period, c, alpha, a, b)) return false;
    int j = 0, cnt = 0, steps = 0;
    for (int s = 0; s < G; ++s) {
        const int k = c.gp[j];
        if (k >= 0) {
            if (cnt == n) return false;
            buf[cnt++] = k;
        }
        j = j + a < G ? j + (int)a : j >= b ? j - (int)b : j + (int)a - (int)b;
        ++steps;
        if (j == 0) break;
    }
    if (steps != G || cnt != n) return false;
    // rotate to the smallest grid phase (they increase cyclically along the walk)
    const double phi0 = grid_phase(c.t_ref / period);
    const double g0 = grid_phase(phi0 + c.slot[buf[0]] * alpha);
    int lo = 1, hi = n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (grid_phase(phi0 + c.slot[buf[mid]] * alpha) < g0) hi = mid;
        else lo = mid + 1;
    }
    const int rot = lo < n ? lo : 0;
    auto at = [&](int i) { const int q = rot + i; return buf[q >= n ? q - n : q]; };
    auto phase = [&](int k) { return fold_phase(t[k], period); };
    // samples whose phase wrapped across 0/1 against their grid phase lie in
    // the first hs / last ts walk positions: move them to the other end
    const double thr = 2.0 * (c.emax / period + 1e-9);
    int hs = 0, ts = 0;
    while (hs < n) {
        const double ph = phase(at(hs));
        if (thr <= ph && ph <= 1.0 - thr) break;
        ++hs;
    }
    while (hs + ts < n) {
        const double ph = phase(at(n - 1 - ts));
        if (thr <= ph && ph <= 1.0 - thr) break;
        ++ts;
    }
    int out = 0;
    for (int i = n - ts; i < n; ++i) if (phase(at(i)) < 0.5) order[out++] = at(i);
    for (int i = 0; i < hs; ++i) if (phase(at(i)) < 0.5) order[out++] = at(i);
    for (int i = hs; i < n - ts; ++i) order[out++] = at(i);
    for (int i = n - ts; i < n; ++i) if (phase(at(i)) >= 0.5) order[out++] = at(i);
    for (int i = 0; i < hs; ++i) if (phase(at(i)) >= 0.5) order[out++] = at(i);
    return phase(order[0]) <= phase(order[1]) && phase(order[n - 2]) <= phase(order[n - 1]);
}
