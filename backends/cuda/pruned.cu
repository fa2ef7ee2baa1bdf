// pruned: TLS's exact statistic with the certified pruning cascade of
// backends/pruning.py (the same cascade as the cpu backend), float64 throughout.
//
// Two layouts of one search, the same stages (and counters but the K-piece
// bound's, whose pieces differ):
// pruned_period (light curves whose fold fits in shared memory): one block per
//   period does everything in shared memory: fold, bucket sort, prefix sums,
//   seeds, then the cascade over all the period's (width, shift) pairs as one
//   flat list, widths taken W_GROUP at a time;
// otherwise (any n) every per-period array lives in global memory:
//   pruned_fold (fold, bucket_sort.cuh with its counts in shared memory: the
//   samples' phase order), pruned_prefix (prefix sums of the patched fold,
//   gathered in that order),
//   pruned_seed (one block per period, a warp per width, the cumulative flux
//   in shared memory where it fits) and pruned_scan (one block per group of a
//   period's widths of one stride, their shifts interleaved),
//   then reduce_jobs (job_reduce.cuh) per period.
// The cascade of a shift (scan_group, scan_period): depth filter and one-piece
// bound (which short templates skip), survivors compacted into a queue (the
// block's in pruned_scan, each warp's own in pruned_period), K-piece
// bound per queued shift (short ones skip it; linear pieces, as the cpu
// backend, where the fold has pj: the global layout, and pruned_period with
// uniform weights where pj fits, else constant ones), survivors compacted again, then
// EXACT_LANES lanes per survivor for the exact dot products (group_gain, the
// one dot product of every stage and seed); the best fit by TLS's total
// order (tls_common.cuh). A period's threshold T is the largest exact gain at
// the deepest box of each width. Work counters (backends.pruning.COUNTERS) are
// integer sums, so they are deterministic.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda_pipeline.h>
#include "bucket_sort.cuh"
#include "job_reduce.cuh"

#ifndef CHUNK
#define CHUNK (8 * BLOCK)
#endif
#ifndef PREFIX_ITEMS
#define PREFIX_ITEMS 1  // pruned_prefix's samples per thread at a time
#endif
#ifndef PREFIX_BLOCKS_PER_SM
#define PREFIX_BLOCKS_PER_SM (1024 / BLOCK)  // 64 registers
#endif
#ifndef SCAN_BLOCKS_PER_SM
#define SCAN_BLOCKS_PER_SM (1024 / BLOCK)  // 64 registers, no spills: fastest of 2, 3, 4 blocks (NOTES.md)
#endif
#ifndef EXACT_LANES
#define EXACT_LANES 8  // lanes per survivor's exact dot products (NOTES.md step 11)
#endif
#define GROUPS (32 / EXACT_LANES)  // survivors per warp at a time
#ifndef EXACT_UNROLL
// pruned_period: a survivor's template loads in flight per lane (K2-like kernel: 4 +1.3 %, 16 +1 %)
#define EXACT_UNROLL 8
#endif
#ifndef EXACT_TILE
// survivors per warp at a time of one job's long template (pruned_scan; 4 spills, NOTES.md step 26)
#define EXACT_TILE 2
#endif
#define TILE_MIN_LENGTH 64  // templates from this long take exact_tiles
#ifndef SEED_UNROLL
#define SEED_UNROLL 8  // a seed's dot product (a warp's): loads in flight per lane (4: TESS-like seeds +6 %)
#endif
#ifndef SEED_BLOCK
#define SEED_BLOCK 1024  // pruned_seed's threads (pruned.py's SEED_BLOCK sets it)
#endif
#ifndef LINE_PIECES
#define LINE_PIECES 6  // the linear bound's pieces (pruning.LINE_PIECES, set by pruned.py)
#endif
#ifndef COARSE_DEPTH
#define COARSE_DEPTH 1e-6  // the one-piece bound's least box depth (pruning.COARSE_DEPTH, set by pruned.py)
#endif
#ifndef COARSE_PAD
#define COARSE_PAD 1e-9  // the one-piece bound's pad (pruning.COARSE_PAD, set by pruned.py)
#endif
#ifndef SCAN_JOBS
#define SCAN_JOBS 8  // widths per pruned_scan block at most (pruned.py's SCAN_JOBS sets it)
#endif
#ifndef GRAB_ITEMS
#define GRAB_ITEMS 2  // pruned_scan: a warp takes 32 x GRAB_ITEMS shifts at a time (NOTES.md step 12)
#endif
#ifndef PERIOD_GRAB
#define PERIOD_GRAB 4  // the same in pruned_period (2: K2-like kernel +2.3 %, NOTES.md step 82)
#endif
#ifndef PERIOD_AT_ONCE
#define PERIOD_AT_ONCE 2
#endif
#ifndef ROW_GATE
#define ROW_GATE 1  // pruned_period with uniform weights: rows of 32 shifts bounded before the scan (row_gate)
#endif
#ifndef PERIOD_KERNEL
#define PERIOD_KERNEL 1  // 0: no pruned_period (pruned.py's modules past SHARED_BLOCK threads never launch one)
#endif
#define W_GROUP 48    // widths per table of pruned_period (TLS's grids allow at most ~32 per period)
#define SLOT_BITS 25  // queue entry: (width in its group) << SLOT_BITS | shift, below 2^31

// Profile builds' clock slots (stage_clocks.cuh), pruned_period's stages:
// the fold's phases, prefix sums, seeds, the cascade's coarse part, its
// flushes (their fine stage, exact gains), the count of flushes, then the
// fold's bucket sort and gather, and the row gate (row_gate; its jobs' making
// is in the coarse stage's), then thread 0's fine rounds within the coarse
// part (warp 0's share of it);
// pruned_scan's blocks mark the coarse part, the flushes and their count.
// pruned_period's fine rounds run within its coarse part, its flushes' fine
// stage being the last round after the period's takes.
enum { CLOCK_FOLD, CLOCK_PREFIX, CLOCK_SEEDS, CLOCK_COARSE, CLOCK_FLUSH, CLOCK_FINE, CLOCK_EXACT,
       N_FLUSHES, CLOCK_SORT, CLOCK_GATHER, CLOCK_GATE, CLOCK_ROUNDS, N_CLOCKS };
#include "stage_clocks.cuh"

// Dynamic shared memory, declared once: block-scope declarations in the
// extern "C" kernels and in fold_order's template differed in linkage (nvcc
// warning 1556).
extern __shared__ double smem[];

// counter slots, as backends.pruning.COUNTERS
enum { SHIFTS, DEPTH_PASS, COARSE_PASS, FINE_PASS, SEED_DOTS, EXACT_MACS, BRUTE_MACS, VIOLATIONS };

// The folded arrays of one period (global or shared memory): rw = u = (1 - f) w
// and w (length m); cs, pu, pu2, pw, pw2: prefix sums of f, u, u^2, w, w^2
// (length m + 1; pw, pw2 null with uniform weights and in pruned_period,
// whose bounds take A2 as its least a2c); pj: prefix sums of
// (j - origin) u, origin = m / 2, for the K-piece linear bound (null:
// constant pieces, pruned_period where it has no room for it or the weights
// differ).
struct Fold {
    const double *rw, *w, *cs, *pu, *pu2, *pw, *pw2, *pj;
    double origin;
};

// The template and piece tables of every width, as the kernels receive them.
struct Tables {
    const int *widths, *strides;
    const long long *offsets;
    const double *a, *kscale, *sum_a2, *overshoot;
    const int *n_pieces, *bounds;
    const double *inv_n, *c, *c2, *rho_q, *rho2, *mean, *amax, *sum_c;
    const double *s_max;  // pruning.depth_limits per width
    // the K-piece linear bound (PieceTables.line_*): boundaries, means,
    // slopes, centres, residual norm; terms: (sum |c|, sum |slope|, defects)
    const int *line_bounds;
    const double *line_c, *line_slope, *line_centre, *line_rho_q, *line_terms;
    int k_max, k_lines;
};

// Rounding allowances of one (period, width), doubled (backends/pruning.py);
// e_s: the error of a window's sum of u taken from its flux sum (uniform
// weights: coarse_stage with U_FROM_FLUX in pruned_scan, row_gate's slack).
struct Allowances {
    double e_v, e_vw, e_ar1, e_ark, e_a21, e_a2k, e_s;
};

// One width of one period: its template, shifts and the cascade's constants.
struct Job {
    const double *a;  // template (1 - signal), length L
    int wi, d, stride, length, n_shifts, kp, start;  // start: first entry in a flat list of shifts
    double kscale, a2u;  // k = box * kscale; A2 = a2u with uniform weights (0: not uniform)
    double a2c;  // A2's least at any shift: a2u with uniform weights, else w_least sum a^2 less its allowance
    double s_max;  // depth filter: window flux sum at most s_max (pruning.depth_limits)
    double rd, ov, inv_len, floor, c1, c12, q1, r12, qk, rk2;  // q1, qk: pruning.rho_q of rho_1, rho_K
    Allowances e;
    double inv_t, ql, e_arl, e_vl;  // linear bound: 12 / (L (L^2 - 1)), pruning.rho_q of rho_L, allowances
};

// Per-thread work counts of a scan.
struct Tally {
    unsigned passed, violations, queued, survived;  // queued: past the one-piece bound; survived: the K-piece
    unsigned long long macs;
};

// Shifts scanned of width d on a patched fold of m samples (n real ones):
// shifts at and past n repeat earlier ones when the stride is 1 (cpu: shift_end).
__device__ __forceinline__ int shift_count(int m, int n, int d, int stride)
{
    const int end = stride == 1 ? min(m - d + 1, n) : m - d + 1;
    return (end - 1) / stride + 1;
}

// The template part of width wi's job (what a seed needs).
__device__ __forceinline__ Job job_of(int wi, int m, int n, const Tables &tb, double w_uniform)
{
    Job j;
    j.wi = wi;
    j.a = tb.a + tb.offsets[wi];
    j.d = tb.widths[wi];
    j.stride = tb.strides[wi];
    j.length = (int)(tb.offsets[wi + 1] - tb.offsets[wi]);
    j.n_shifts = shift_count(m, n, j.d, j.stride);
    j.kscale = tb.kscale[wi];
    j.a2u = w_uniform * tb.sum_a2[wi];
    j.rd = __drcp_rn((double)j.d);
    j.s_max = tb.s_max[wi];
    return j;
}

// mean: (mean a, mean a^2) of the width; sum_c: (sum c_p, sum c2_p) of its pieces;
// w_uniform: the weight, 0 where weights differ; m: samples of the fold.
__device__ Allowances allowances(const double *mean, const double *sum_c, double amax,
                                 const double *scale, double g, double w_uniform, int m)
{
    const double u1 = scale[0], u2 = scale[1], w1 = scale[2], w2 = scale[3];
    const bool uniform = w_uniform > 0.0;
    const double dots_ar = g * amax * u1, dots_a2 = uniform ? 0.0 : g * amax * amax * w1;
    Allowances e;
    e.e_v = 2.0 * (4.0 * g * u2 + 7.0 * g * u1 * u1);
    e.e_vw = 2.0 * (4.0 * g * w2 + 7.0 * g * w1 * w1);
    e.e_ar1 = 2.0 * (mean[0] * 4.0 * g * u1 + dots_ar);
    e.e_ark = 2.0 * (sum_c[0] * 4.0 * g * u1 + dots_ar);
    e.e_a21 = 2.0 * (mean[1] * 4.0 * g * w1 + dots_a2);
    e.e_a2k = 2.0 * (sum_c[1] * 4.0 * g * w1 + dots_a2);
    e.e_s = 0.0;
    return e;
}

// The linear bound's rounding allowances, doubled (cpu.line_allowances):
// its data moments are off by at most 3 g m U1 (backends/pruning.py); not
// inlined: its square root and divisions, once per job, stay out of
// pruned_period's registers.
struct LineAllowances {
    double inv_t, e_arl, e_vl;
};

__device__ __noinline__ LineAllowances line_allowances(const double *terms, double amax, double u1, double u2,
                                                       double g, int m, int length)
{
    const double len = length, gm = g * m;
    const double t = len * (len * len - 1.0) / 12.0, root = sqrt(u2 / t);
    const double on_mean = terms[0] * 4.0 * g * u1 + terms[1] * 4.0 * gm * u1 + terms[2] * u1 / len
                           + terms[3] * root + g * amax * u1;
    const double on_squares = 4.0 * g * u2 + 7.0 * g * u1 * u1 + 6.0 * gm * u1 * root
                              + 9.0 * (gm * u1) * (gm * u1) / t;
    return {1.0 / t, 2.0 * on_mean, 2.0 * on_squares};  // L = 1: inv_t inf, and the bound NaN, which keeps the shift
}

// A2 = sum_q a_q^2 W_(i+q) >= w_least sum a^2 at every shift (cpu.const_a2_floor):
// sum a^2 (L positive terms) and the product are within (L + 2) eps relative,
// covered by (L + 4) eps; less e_a21, which holds twice the exact
// evaluation's error g amax^2 W1 (backends/pruning.py); at least 0.
__device__ __forceinline__ double const_a2_floor(double w_least, double sum_a2, int length, double e_a21)
{
    return fmax(w_least * sum_a2 * (1.0 - (length + 4) * 0x1p-52) - e_a21, 0.0);
}

// The whole job of width wi: template part, then the period's floor (from its
// threshold bits), allowances (from its scales U1, U2, W1, W2) and piece stats;
// the linear bound's with ``line`` (a fold with pj). w_least: the least weight.
__device__ Job cascade_job(int wi, int m, int n, const Tables &tb, double w_uniform, double w_least,
                           const double *scale, unsigned long long threshold, double g, double pad, bool line)
{
    Job j = job_of(wi, m, n, tb, w_uniform);
    const double t = __longlong_as_double((long long)threshold);
    j.floor = t - pad * t;
    j.e = allowances(tb.mean + 2 * wi, tb.sum_c + 2 * wi, tb.amax[wi], scale, g, w_uniform, m);
    j.a2c = w_uniform > 0.0 ? j.a2u : const_a2_floor(w_least, tb.sum_a2[wi], j.length, j.e.e_a21);
    j.ov = tb.overshoot[wi];
    j.inv_len = 1.0 / j.length;
    j.c1 = tb.mean[2 * wi]; j.c12 = tb.mean[2 * wi + 1];
    j.q1 = tb.rho_q[2 * wi]; j.r12 = tb.rho2[2 * wi];
    j.qk = tb.rho_q[2 * wi + 1]; j.rk2 = tb.rho2[2 * wi + 1];
    j.kp = tb.n_pieces[wi];
    if (w_uniform > 0.0) j.e.e_s = 5.0 * g * (w_uniform * m + 2.0 * scale[0]);  // sum |f| <= m + U1 / w
    if (line) {
        const LineAllowances e = line_allowances(tb.line_terms + 4 * wi, tb.amax[wi], scale[0], scale[1], g, m,
                                                 j.length);
        j.inv_t = e.inv_t;
        j.e_arl = e.e_arl;
        j.e_vl = e.e_vl;
        j.ql = tb.line_rho_q[wi];
    }
    return j;
}

// The flux sum of the box of shift i (the depth filter passes it where it is
// at most j.s_max), and the box's depth 1 - sum / d, the division rounded as
// '/' (div_rn, given rd = 1 / d), as on the CPU.
__device__ __forceinline__ double window_sum(const Fold &f, const Job &j, int i)
{
    return f.cs[i + j.d] - f.cs[i];
}

__device__ __forceinline__ double depth_of(double sum, const Job &j)
{
    return 1.0 - div_rn(sum, j.d, j.rd);
}

__device__ __forceinline__ double box_depth(const Fold &f, const Job &j, int i)
{
    return depth_of(window_sum(f, j, i), j);
}

// Exact gains of TILE shifts i[r] (depths k[r]) of one job by a group of
// LANES consecutive lanes (1: one thread; 32: a warp), into gain[r] of every
// lane of the group: each template load serves the TILE dot products, whose
// sums are those of TILE calls with one shift (the same order, the same
// results). With LANES > 1 all 32 lanes of the warp call it together (the
// sums meet by shuffles). The job's fields are read once: a reference into
// shared memory is read again after every __ldg, which then waits on the one
// before (K2: 3x slower). UNROLL: a lane's loads in flight (the order of its
// sum is the same for any).
template <int LANES, int TILE, int UNROLL = (TILE > 1 ? 2 : 4)>
__device__ __forceinline__ void group_gains(const Fold &f, const Job &j, const int *i, const double *k,
                                            double *gain)
{
    const double *a = j.a;
    const int length = j.length, first = LANES == 1 ? 0 : threadIdx.x % LANES;
    const double a2u = j.a2u;
    double ar[TILE], a2[TILE];
#pragma unroll
    for (int r = 0; r < TILE; ++r) ar[r] = a2[r] = 0.0;
    if (a2u > 0.0) {
#pragma unroll(UNROLL)
        for (int q = first; q < length; q += LANES) {
            const double aq = __ldg(a + q);
#pragma unroll
            for (int r = 0; r < TILE; ++r) ar[r] = fma(aq, f.rw[i[r] + q], ar[r]);
        }
    } else {
#pragma unroll(UNROLL)
        for (int q = first; q < length; q += LANES) {
            const double aq = __ldg(a + q);
#pragma unroll
            for (int r = 0; r < TILE; ++r) {
                ar[r] = fma(aq, f.rw[i[r] + q], ar[r]);
                a2[r] = fma(aq * aq, f.w[i[r] + q], a2[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < TILE; ++r) {
#pragma unroll
        for (int o = LANES / 2; o > 0; o >>= 1) {
            ar[r] += __shfl_xor_sync(0xffffffffu, ar[r], o);
            a2[r] += __shfl_xor_sync(0xffffffffu, a2[r], o);
        }
        gain[r] = 2.0 * k[r] * ar[r] - k[r] * k[r] * (a2u > 0.0 ? a2u : a2[r]);
    }
}

// The exact gain of one shift i (group_gains with one).
template <int LANES, int UNROLL = 4>
__device__ __forceinline__ double group_gain(const Fold &f, const Job &j, int i, double k)
{
    double gain;
    group_gains<LANES, 1, UNROLL>(f, j, &i, &k, &gain);
    return gain;
}

// The deepest box of a job over lanes' shifts s = first, first + step, ...:
// the smallest window flux sum passing the depth filter (ties: the smaller
// shift); i = -1 if none. ``deep`` counts the shifts that pass it: the
// search's depth_pass, counted here because every shift is visited here
// (pruned_period's row gate leaves rows unscanned).
struct Deepest {
    double sum;
    int i;
};

__device__ __forceinline__ Deepest deeper(const Deepest &p, const Deepest &q)
{
    if (q.i < 0) return p;
    if (p.i < 0) return q;
    return (q.sum < p.sum || (q.sum == p.sum && q.i < p.i)) ? q : p;
}

__device__ __forceinline__ Deepest deepest_box(const Fold &f, const Job &j, int first, int step, unsigned &deep)
{
    Deepest mine = {INFINITY, -1};
    const double s_max = j.s_max;
    for (int s = first; s < j.n_shifts; s += step) {
        const int i = s * j.stride;
        const double sum = window_sum(f, j, i);
        deep += sum <= s_max;
        if (sum <= s_max && sum < mine.sum) mine = {sum, i};
    }
    return mine;
}

// The seeds of widths first .. first + count - 1 of one period, a group of
// LANES lanes per width (group q of ``warps`` x 32 / LANES takes widths q,
// q + groups, ...): the width's deepest box, then its exact gain; the largest
// positive gain goes into *threshold (as its bits: positive doubles order as
// their bits), each group's first lane counts the seeds and their
// multiply-adds, and every lane its shifts past the depth filter into
// ``deep``. A warp's groups run their widths together, so its shuffles see all
// its lanes: a group past ``count`` or without a box computes the gain of an
// empty template.
template <int LANES>
__device__ __forceinline__ void warp_seeds(const Fold &f, int first, int count, int m, int n, const Tables &tb,
                                           double w_uniform, int warps, unsigned long long *threshold,
                                           unsigned long long &seeds, unsigned long long &macs, unsigned &deep)
{
    constexpr int PER_WARP = 32 / LANES;
    const int lane = threadIdx.x % LANES, groups = warps * PER_WARP;
    for (int q0 = threadIdx.x / 32 * PER_WARP; q0 < count; q0 += groups) {
        const int q = q0 + threadIdx.x % 32 / LANES;
        Job j = {};
        if (q < count) j = job_of(first + q, m, n, tb, w_uniform);
        Deepest top = deepest_box(f, j, lane, LANES, deep);
        for (int o = LANES / 2; o > 0; o >>= 1)
            top = deeper(top, {__shfl_xor_sync(0xffffffffu, top.sum, o),
                               __shfl_xor_sync(0xffffffffu, top.i, o)});
        const bool found = top.i >= 0;
        if (!__any_sync(0xffffffffu, found)) continue;
        if (!found) j.length = 0;
        const double k = found ? depth_of(top.sum, j) * j.kscale : 0.0;
        const double gain = group_gain<LANES, SEED_UNROLL>(f, j, max(top.i, 0), k);
        if (lane == 0 && found) {
            if (gain > 0.0) atomicMax(threshold, (unsigned long long)__double_as_longlong(gain));
            ++seeds;
            macs += j.length;
        }
    }
}

// Whether a shift's gain can reach ``floor``: its bound 2k UB_AR - k^2 LB_A2
// plus pad (2k |UB_AR| + k^2 LB_A2) (cpu: the same), UB_AR = mean + rho sqrt(V),
// tested without a square root: with S = rho sqrt(V) >= 0 and B the rest,
// the bound is at most 2k(1 + pad) S + B, so it is below floor iff
// R = floor - B > 0 and k^2 q V < R^2, q = (2 (1 + pad) rho)^2 (a table's:
// pruning.rho_q). V < 0 (the window's squares within their allowance of zero)
// means S = 0, and the product, then negative, is below R^2 too: no fmax.
// R as floor + k^2 LB_A2 (1 - pad) - 2k (lin + pad |lin|): three fmas, two
// after lin (with q and no fmax: 11 instructions fewer per K2-like shift;
// this form of R alone: kernel -1 %).
// The roundings of forming R and the product, a few ulps of each term, are
// within the pads.
__device__ __forceinline__ bool may_win(double k, double mean, double var, double q, double e_v,
                                        double e_ar, double lb_a2, double pad, double floor)
{
    const double lin = mean + e_ar, kk = k * k;
    const double r = fma(-(k + k), fma(fabs(lin), pad, lin), fma(kk * lb_a2, 1.0 - pad, floor));
    return !(r > 0.0) | (kk * q * (var + e_v) >= r * r);
}

// An upper bound of sqrt(x), x >= 0, from the SFU's single-precision
// reciprocal square root (PTX rsqrt.approx.f32, CUDA's rsqrtf: at most 2 ulp,
// 2^-22 relative): x rounded up to a float, times its rsqrt (one more float
// rounding, 2^-24), raised by 2^-20 in float64, which covers both with room
// to spare: within ~2^-20 of sqrt(x) relative. x = 0 or past the float range
// gives NaN or inf, which a2_floor's fmax turns into its least.
// A float64 square root costs several times the instructions.
__device__ __forceinline__ double sqrt_above(double x)
{
    const float xf = __double2float_ru(x);
    float r;
    asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(xf));
    return (double)(xf * r) * (1.0 + 0x1p-20);
}

// LB_A2 of may_win: A2 itself with uniform weights (a2u > 0), else
// mean_w - rho2 sqrt(V_w) less its allowance, at least ``least`` (the job's
// constant floor a2c, itself at least 0; a fold without pw, pw2 passes
// mean_w = var_w = 0, which gives a2c). ROOT_ABOVE (the
// one-piece bound, once per shift: K2-like with errors that differ, scan
// -2.5 %): sqrt_above, a floor no larger, so as certified; in the K-piece
// bound it spilled pruned_period.
template <bool ROOT_ABOVE = false>
__device__ __forceinline__ double a2_floor(double a2u, double mean_w, double var_w, double rho2,
                                          double e_vw, double e_a2, double least)
{
    const double v = fmax(var_w + e_vw, 0.0);
    return a2u > 0.0 ? a2u : fmax(mean_w - rho2 * (ROOT_ABOVE ? sqrt_above(v) : sqrt(v)) - e_a2, least);
}

// Append value[r] where keep[r] (r < ROWS: a thread's shifts of one take) to
// ``list``: one shared atomic per warp for all rows, rows one after another,
// lanes in order within a row (the order does not matter: the fits are offered
// by TLS's total order and the counts are sums).
template <int ROWS>
__device__ __forceinline__ void push_rows(int *list, int *count, const bool *keep, const int *value)
{
    const unsigned active = __activemask();
    unsigned votes[ROWS];
    int total = 0;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        votes[r] = __ballot_sync(active, keep[r]);
        total += __popc(votes[r]);
    }
    if (!total) return;
    const int lane = threadIdx.x % 32, leader = __ffs(active) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, total);
    base = __shfl_sync(active, base, leader);
    const unsigned below = (1u << lane) - 1;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (keep[r]) list[base + __popc(votes[r] & below)] = value[r];
        base += __popc(votes[r]);
    }
}

// Sum c_p S_p and sum (Q_p - S_p^2 / n_p) over the pieces [i + b_p, i + b_{p+1}).
// Piece p's end is piece p + 1's start: each boundary's prefix sums are loaded
// once (the fine stage's shared-memory loads halved; the sums are the same).
__device__ __forceinline__ void piece_sums(const int *bounds, const double *inv_n, const double *c,
                                           int n_pieces, const double *p1, const double *p2, int i,
                                           double &mean, double &var)
{
    mean = 0.0;
    var = 0.0;
    int b = i + bounds[0];
    double x1 = p1[b], x2 = p2[b];
    for (int p = 0; p < n_pieces; ++p) {
        b = i + bounds[p + 1];
        const double y1 = p1[b], y2 = p2[b], s = y1 - x1;
        mean = fma(c[p], s, mean);
        var += (y2 - x2) - s * s * inv_n[p];
        x1 = y1;
        x2 = y2;
    }
}

// Constants of a cascade launch.
struct Cascade {
    double pad;
    int prune_min, fine_min, debug;
    double w0;  // the weight with uniform weights, else 0
    __device__ __forceinline__ bool uniform() const { return w0 > 0.0; }
};

// Offer an exact gain to the running best fit.
__device__ __forceinline__ void offer(Best &best, const Job &j, int i, double box, double gain)
{
    const Best cand = {gain, 1.0 - box * j.ov, j.wi, i};
    if (gain > 0.0 && better(cand, best)) best = cand;
}

// Stage 1 of shift i: the depth filter, then the one-piece bound, which a
// template shorter than prune_min skips (its exact gain is cheaper: it goes
// on through the queues to the exact stage); i must be a shift of the job even
// where valid is false (the shift then fails). EAGER: straight-line code, so
// a thread's shifts overlap (prefix sums in shared memory); otherwise a shift
// that fails the depth filter loads nothing more (prefix sums in global
// memory: the 78-day curve's cascade 73 -> 79 ms when eager). U_FROM_FLUX
// (pruned_scan's): with uniform weights a template as long as its box takes
// the window's sum of u from the flux sum already loaded, w0 (d - s), within
// e_s, instead of loading pu twice (TESS-like cascade -6 %; in pruned_period
// it cost K2-like 2 %). CONST_A2: the bound takes A2 as the job's a2c (A2
// itself with uniform weights; pruned_period's folds with weights that differ,
// which have no pw, pw2); U_FROM_FLUX with CONST_A2 needs uniform weights.
// Otherwise (pruned_scan, weights that differ) the bound with a2c comes
// first, and only a shift it keeps loads pw, pw2 for the data's floor (at
// least a2c: the decision of one test with the larger floor; `k2w` cascade
// 11.5 -> 11.1 ms on an H100).
struct Coarse {
    bool deep, keep;  // passed the depth filter; queued
    double k;  // one fma's: within COARSE_PAD's allowance of the exact stage's (backends/pruning.py)
};

template <bool CONST_A2, bool EAGER, bool U_FROM_FLUX>
__device__ __forceinline__ Coarse coarse_stage(const Fold &f, const Job &j, int i, bool valid,
                                               const Cascade &cc)
{
    const double s = window_sum(f, j, i);
    const bool deep = valid && s <= j.s_max;
    Coarse c = {deep, false, 0.0};
    if (!EAGER && !c.deep) return c;
    c.k = fma(-s, j.rd * j.kscale, j.kscale);  // not depth_of's chain of seven
    double su, e_ar = j.e.e_ar1, e_v = j.e.e_v;
    if (CONST_A2 && U_FROM_FLUX && j.length == j.d) {
        su = cc.w0 * (j.d - s);
        e_ar += 2.0 * fabs(j.c1) * j.e.e_s;
        e_v += 2.0 * j.e.e_s * (2.0 * fabs(su) + j.e.e_s) * j.inv_len;
    } else {
        su = f.pu[i + j.length] - f.pu[i];
    }
    const double vu = (f.pu2[i + j.length] - f.pu2[i]) - su * su * j.inv_len;
    const bool unbounded = (j.length < cc.prune_min) | !(c.k > 0.0) | (c.k < COARSE_DEPTH * j.kscale);
    bool bound = unbounded | may_win(c.k, j.c1 * su, vu, j.q1, e_v, e_ar, j.a2c, COARSE_PAD, j.floor);
    if (!CONST_A2 && bound && !unbounded) {
        const double sw = f.pw[i + j.length] - f.pw[i];
        const double vw = (f.pw2[i + j.length] - f.pw2[i]) - sw * sw * j.inv_len;
        const double lb_a2 = a2_floor<true>(j.a2u, j.c12 * sw, vw, j.r12, j.e.e_vw, j.e.e_a21, j.a2c);
        bound = may_win(c.k, j.c1 * su, vu, j.q1, e_v, e_ar, lb_a2, COARSE_PAD, j.floor);
    }
    c.keep = c.deep & bound;
    return c;
}

// AR's K-piece linear bound at shift i (cpu.line_sums, detrended_squares):
// sum_p (c_p S_p + slope_p M_p) into mean, the window's squares left after
// its least-squares line into var; each boundary's prefix sums loaded once.
// All LINE_PIECES pieces, unrolled, so every load is in flight at once: the
// tables pad a template's fewer pieces with its last boundary and zero
// constants, which add exact zeros (the sums are those of its own pieces).
__device__ __forceinline__ void line_terms(const Fold &f, const Job &j, const Tables &tb, int i,
                                           double &mean, double &var)
{
    const int *lb = tb.line_bounds + j.wi * (tb.k_lines + 1);
    const double *c = tb.line_c + j.wi * tb.k_lines, *slope = tb.line_slope + j.wi * tb.k_lines;
    const double *centre = tb.line_centre + j.wi * tb.k_lines;
    int b = i + lb[0];
    const double u0 = f.pu[b], j0 = f.pj[b];
    double xu = u0, xj = j0;
    mean = 0.0;
#pragma unroll
    for (int p = 0; p < LINE_PIECES; ++p) {
        b = i + lb[p + 1];
        const double yu = f.pu[b], yj = f.pj[b], s = yu - xu;
        mean += c[p] * s + slope[p] * ((yj - xj) - (i + (centre[p] - f.origin)) * s);
        xu = yu;
        xj = yj;
    }
    const double s = xu - u0, moment = (xj - j0) - (i + (0.5 * (j.length - 1) - f.origin)) * s;
    var = (f.pu2[i + j.length] - f.pu2[i]) - s * s * j.inv_len - moment * moment * j.inv_t;
}

// Stage 2 of a queued shift: the K-piece bound (templates of fine_min
// samples or more): AR's linear pieces where the fold has pj, else its
// constant pieces; A2's constant pieces (CONST_A2: A2's least a2c, as in
// coarse_stage). Whether shift i is evaluated exactly. EAGER: straight-line
// code, the loads of a shift the bound does not take made all the same (they
// lie within the fold), so that its loads overlap (pruned_period's full fine
// rounds: K2-like kernel -0.9 %, NOTES.md step 87).
template <bool CONST_A2, bool EAGER = false>
__device__ __forceinline__ bool fine_stage(const Fold &f, const Job &j, int i, const Tables &tb,
                                           const Cascade &cc, Tally &tally)
{
    const bool short_template = j.length < cc.fine_min;  // fine_min >= prune_min (pruning.tuning)
    if (!EAGER && short_template) return true;
    const double k = box_depth(f, j, i) * j.kscale;
    if (!EAGER && !(k > 0.0)) return true;
    const int *bw = tb.bounds + j.wi * (tb.k_max + 1);
    const double *nw = tb.inv_n + j.wi * tb.k_max;
    double mu, vu, mw = 0.0, vw = 0.0;
    if (f.pj)
        line_terms(f, j, tb, i, mu, vu);
    else
        piece_sums(bw, nw, tb.c + j.wi * tb.k_max, j.kp, f.pu, f.pu2, i, mu, vu);
    if (!CONST_A2) piece_sums(bw, nw, tb.c2 + j.wi * tb.k_max, j.kp, f.pw, f.pw2, i, mw, vw);
    const double lb_a2 = a2_floor(j.a2u, mw, vw, j.rk2, j.kp * j.e.e_vw, j.e.e_a2k, j.a2c);
    // f.pj tested again, not its constants carried from the branch above: 16 bytes more of pruned_scan's spills
    const bool keep = (EAGER & (short_template | !(k > 0.0))) |
                      (f.pj ? may_win(k, mu, vu, j.ql, j.e_vl, j.e_arl, lb_a2, cc.pad, j.floor)
                            : may_win(k, mu, vu, j.qk, j.kp * j.e.e_v, j.e.e_ark, lb_a2, cc.pad, j.floor));
    if (!keep && cc.debug) tally.violations += group_gain<1>(f, j, i, k) >= j.floor;
    return keep;
}

// Shared state of one block's cascade.
struct ScanQueues {
    int queue[CHUNK], survivor[CHUNK];
    int next, n_queue, n_survivors;  // next: pruned_scan's first entry no warp has taken
    int start[SCAN_JOBS + 1], cursor[SCAN_JOBS];  // survivors by job (exact_by_job)
};

// The exact gains of survivors [0, count) (entries g << SLOT_BITS | shift),
// EXACT_LANES lanes each: a warp's groups take survivors in rounds, a group
// past the last repeating the round's first, unoffered. UNROLL: group_gain's.
template <int UNROLL = 4>
__device__ __forceinline__ void exact_groups(const Fold &f, const Job *jobs, const int *survivor, int count,
                                             Best &best, Tally &tally)
{
    for (int round = threadIdx.x / 32 * GROUPS; round < count; round += BLOCK / EXACT_LANES) {
        const int q = round + threadIdx.x % 32 / EXACT_LANES;
        const int entry = survivor[q < count ? q : round];
        const Job &j = jobs[entry >> SLOT_BITS];
        const int i = entry & ((1 << SLOT_BITS) - 1);
        const double box = box_depth(f, j, i);
        const double gain = group_gain<EXACT_LANES, UNROLL>(f, j, i, box * j.kscale);
        if (q < count) {
            offer(best, j, i, box, gain);
            if (threadIdx.x % EXACT_LANES == 0) tally.macs += j.length;
        }
    }
}

// The same for survivors of one job whose template is long: a warp takes
// EXACT_TILE of them at a time (the last repeated past the end, unoffered),
// each template load serving all of them.
// Their boxes are computed again to be offered rather than kept (registers).
__device__ __forceinline__ void exact_tiles(const Fold &f, const Job &j, const int *survivor, int count,
                                            Best &best, Tally &tally)
{
    for (int round = threadIdx.x / 32 * EXACT_TILE; round < count; round += BLOCK / 32 * EXACT_TILE) {
        int i[EXACT_TILE];
        double k[EXACT_TILE], gain[EXACT_TILE];
#pragma unroll
        for (int r = 0; r < EXACT_TILE; ++r) {
            i[r] = survivor[min(round + r, count - 1)] & ((1 << SLOT_BITS) - 1);
            k[r] = box_depth(f, j, i[r]) * j.kscale;
        }
        group_gains<32, EXACT_TILE>(f, j, i, k, gain);
#pragma unroll
        for (int r = 0; r < EXACT_TILE; ++r)
            if (round + r < count) {
                offer(best, j, i[r], box_depth(f, j, i[r]), gain[r]);
                if (threadIdx.x % 32 == 0) tally.macs += j.length;
            }
    }
}

// The exact gains of the survivors of jobs[0 .. count) (pruned_scan), job
// by job: the survivors are grouped by job into the queue (free once the fine
// stage has read it), then a long template's take exact_tiles, a short one's
// exact_groups. Warps go from one job's survivors to the next without a barrier.
__device__ __forceinline__ void exact_by_job(const Fold &f, const Job *jobs, int count, ScanQueues &sq,
                                             int survivors, Best &best, Tally &tally)
{
    if (threadIdx.x <= count) sq.start[threadIdx.x] = 0;
    __syncthreads();
    for (int q = threadIdx.x; q < survivors; q += BLOCK) atomicAdd(sq.start + 1 + (sq.survivor[q] >> SLOT_BITS), 1);
    __syncthreads();
    if (threadIdx.x == 0)
        for (int q = 0; q < count; ++q) {
            sq.cursor[q] = sq.start[q];
            sq.start[q + 1] += sq.start[q];
        }
    __syncthreads();
    for (int q = threadIdx.x; q < survivors; q += BLOCK) {
        const int entry = sq.survivor[q];
        sq.queue[atomicAdd(sq.cursor + (entry >> SLOT_BITS), 1)] = entry;
    }
    __syncthreads();
    for (int q = 0; q < count; ++q) {
        const int *mine = sq.queue + sq.start[q], n = sq.start[q + 1] - sq.start[q];
        if (jobs[q].length >= TILE_MIN_LENGTH)
            exact_tiles(f, jobs[q], mine, n, best, tally);
        else
            exact_groups(f, jobs, mine, n, best, tally);
    }
}

// The K-piece bound on every shift of the block's queue (pruned_scan), then
// the exact gains of its survivors job by job. Every thread of the block
// calls it; the queues are empty again on return.
__device__ __forceinline__ void flush(const Fold &f, const Job *jobs, int count, const Tables &tb,
                                      const Cascade &cc, ScanQueues &sq, Best &best, Tally &tally)
{
    CLOCK_MARK(mark);
    const int queued = sq.n_queue;
    for (int q = threadIdx.x; q < queued; q += BLOCK) {
        const int entry = sq.queue[q];
        const Job &j = jobs[entry >> SLOT_BITS];  // shared memory: the fine stage's fields stay out of registers
        const int i = entry & ((1 << SLOT_BITS) - 1);
        const bool keep = f.pw ? fine_stage<false>(f, j, i, tb, cc, tally) : fine_stage<true>(f, j, i, tb, cc, tally);
        push_rows<1>(sq.survivor, &sq.n_survivors, &keep, &entry);
    }
    __syncthreads();
    CLOCK_ADD(CLOCK_FINE, mark);
    const int survivors = sq.n_survivors;
    exact_by_job(f, jobs, count, sq, survivors, best, tally);
    __syncthreads();
    CLOCK_ADD(CLOCK_EXACT, mark);
    if (threadIdx.x == 0) {
        tally.queued += queued; tally.survived += survivors;
        sq.n_queue = 0; sq.n_survivors = 0;
    }
    __syncthreads();
}

// pruned_period's queues: each warp's ring of shifts waiting for the K-piece
// bound (RING places: 31 left over and one push's 32 x PERIOD_AT_ONCE fit),
// and the block's list of its survivors waiting for their exact gains.
#define RING 128
static_assert(RING >= 31 + 32 * PERIOD_AT_ONCE && PERIOD_GRAB % PERIOD_AT_ONCE == 0, "a warp's ring or take");
#define GATE_WORDS 160  // row_gate's mask: 32 x GATE_WORDS rows of a group of jobs at most (more: no gate)
struct PeriodQueues {
    int ring[BLOCK / 32][RING];
    alignas(8) int survivor[CHUNK];  // before the scan, row_gate's tables
    unsigned gate[GATE_WORDS];  // rows that may hold a one-piece survivor
    int n_survivors, next;  // next: the first of the tail's takes no warp has drawn
};

// Places a flush keeps free in pruned_period's survivor list: every warp's
// fine rounds of one take (up to 32 x PERIOD_GRAB survivors) and then of its
// ring's last shifts (up to 31).
#define SURVIVOR_ROOM (BLOCK * (PERIOD_GRAB + 1))

#ifndef TAIL_TAKES
#define TAIL_TAKES (4 * (BLOCK / 32))  // a period's last takes, drawn by whichever warp is free
#endif

// Append value[r] where keep[r] (r < ROWS) to a warp's ring from ``tail``,
// as push_rows does (the whole warp calls it); the new tail.
template <int ROWS>
__device__ __forceinline__ int push_ring(int *ring, int tail, const bool *keep, const int *value)
{
    const unsigned below = (1u << (threadIdx.x % 32)) - 1;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const unsigned votes = __ballot_sync(0xffffffffu, keep[r]);
        if (keep[r]) ring[(tail + __popc(votes & below)) % RING] = value[r];
        tail += __popc(votes);
    }
    return tail;
}

// A warp's fine round: the K-piece bound of the n <= 32 shifts of its ring
// from ``head``, a lane each (FULL: n = 32, straight-line), survivors
// appended to the block's list (the whole warp calls it).
template <bool FULL>
__device__ __forceinline__ void fine_round(const Fold &f, const Job *jobs, const Tables &tb, const Cascade &cc,
                                           const int *ring, int head, int n, PeriodQueues &pq, Tally &tally)
{
    const int lane = threadIdx.x % 32;
    __syncwarp();  // the ring's entries, written by other lanes
    int entry = 0;
    bool keep = false;
    if (FULL || lane < n) {
        entry = ring[(head + lane) % RING];
        keep = fine_stage<true, FULL>(f, jobs[entry >> SLOT_BITS], entry & ((1 << SLOT_BITS) - 1), tb, cc, tally);
        ++tally.queued;
        tally.survived += keep;
    }
    __syncwarp();  // read before the ring's places are written again
    push_rows<1>(pq.survivor, &pq.n_survivors, &keep, &entry);
}

// Shift lists of jobs start at multiples of a take's entries (TAKE in
// pruned_scan, PERIOD_TAKE in pruned_period), so a warp's take lies within one job.
#define TAKE (32 * GRAB_ITEMS)
#define PERIOD_TAKE (32 * PERIOD_GRAB)

template <int ENTRIES>
__device__ __forceinline__ int padded(int n_shifts)
{
    return (n_shifts + ENTRIES - 1) / ENTRIES * ENTRIES;
}

// pruned_period's job (or RowGate) holding entry ``at`` of a period's list,
// searched from job ``g`` on: jobs' entries follow one another, each job's
// from its start, padded to whole takes.
template <class J>
__device__ __forceinline__ int job_of_entry(const J *jobs, int g, int at)
{
    while (at >= jobs[g].start + padded<PERIOD_TAKE>(jobs[g].n_shifts)) ++g;
    return g;
}

// A warp's take: stage 1 of the job's shifts first + lane + 32 r (r <
// GRAB, those below n_shifts), survivors handed to push(keep, entry)
// (entries g << SLOT_BITS | shift), AT_ONCE shifts per thread at a time:
// several where registers allow (pruned_period: eager stages whose loads
// and arithmetic overlap, K2-like coarse stage -24 % of cycles), 1 in
// pruned_scan (64 registers; lazy stages). CONST_A2, U_FROM_FLUX: coarse_stage's.
// GATED (pruned_period with uniform weights): only the rows (32 shifts each)
// whose bits are set in ``rows`` are scanned, in order. depth_pass is
// counted with the seeds (deepest_box), not here.
// Debug: a depth-passing shift the bound skips whose exact gain reaches the
// floor is a violation, and so is a queued shift in a row of ``gated`` (the
// row gate's, which then passes every row).
template <bool CONST_A2, int GRAB, int AT_ONCE, bool U_FROM_FLUX, bool GATED = false, class Push>
__device__ __forceinline__ void take(const Fold &f, const Job &j, int g, int first, const Cascade &cc,
                                     const Push &push, Tally &tally, unsigned rows = 0, unsigned gated = 0)
{
#pragma unroll 1
    for (int r0 = 0; GATED ? rows != 0 : r0 < GRAB; r0 += AT_ONCE) {
        Coarse c[AT_ONCE];
        int at[AT_ONCE];
        bool skipped[AT_ONCE];
#pragma unroll
        for (int r = 0; r < AT_ONCE; ++r) {
            int row = r0 + r;
            if (GATED) {
                row = rows ? __ffs(rows) - 1 : GRAB;
                rows &= rows - 1;
            }
            const int s = first + 32 * row + threadIdx.x % 32;
            const bool valid = (!GATED || row < GRAB) && s < j.n_shifts;
            skipped[r] = gated >> row & 1;
            at[r] = (valid ? s : 0) * j.stride;
            c[r] = coarse_stage<CONST_A2, (AT_ONCE > 1), U_FROM_FLUX>(f, j, at[r], valid, cc);
        }
        bool keep[AT_ONCE];
        int entry[AT_ONCE];
#pragma unroll
        for (int r = 0; r < AT_ONCE; ++r) {
            keep[r] = c[r].keep;
            entry[r] = g << SLOT_BITS | at[r];
        }
        push(keep, entry);
        if (cc.debug)
            for (int r = 0; r < AT_ONCE; ++r) {
                tally.violations += GATED && skipped[r] && c[r].keep;
                if (c[r].deep && !c[r].keep)
                    tally.violations += group_gain<1>(f, j, at[r], box_depth(f, j, at[r]) * j.kscale) >= j.floor;
            }
    }
}

// pruned_scan's cascade over the shifts of jobs[0 .. count), take k of every
// job before take k + 1 (entry e: job e / TAKE % count, its shift e / (TAKE
// count) TAKE + e % TAKE), so the block's warps work on nearby shifts of all
// its widths at once and a period's prefix sums in global memory come from L2
// once for all of them (L1). Warps take TAKE entries at a time from a shared
// counter (their jobs' lengths differ: TESS-like cascade +2 % without it),
// one lazy shift per thread at a time (64 registers), with no barrier,
// through the depth filter and the one-piece bound into the shared queue
// until it could overflow (fewer than GRAB_ITEMS x BLOCK places left), then
// the block flushes it. Every thread of the block calls it.
__device__ __forceinline__ void scan_group(const Fold &f, const Job *jobs, int count, const Tables &tb,
                                           const Cascade &cc, ScanQueues &sq, Best &best, Tally &tally)
{
    int total = 0;
    for (int q = 0; q < count; ++q) total = max(total, count * padded<TAKE>(jobs[q].n_shifts));
    const auto push = [&](const bool *keep, const int *entry) { push_rows<1>(sq.queue, &sq.n_queue, keep, entry); };
    if (threadIdx.x == 0) sq.next = 0;
    __syncthreads();
    for (;;) {
        for (;;) {
            int first = total;
            if (threadIdx.x % 32 == 0 && *(volatile int *)&sq.n_queue <= CHUNK - GRAB_ITEMS * BLOCK)
                first = atomicAdd(&sq.next, TAKE);
            first = __shfl_sync(0xffffffffu, first, 0);
            if (first >= total) break;
            const int k = first / TAKE, g = k % count, shift = k / count * TAKE;
            if (shift >= jobs[g].n_shifts) continue;  // a job with fewer shifts than the longest
            if (cc.uniform())  // the job from shared memory, a job per take
                take<true, GRAB_ITEMS, 1, true>(f, jobs[g], g, shift, cc, push, tally);
            else
                take<false, GRAB_ITEMS, 1, true>(f, jobs[g], g, shift, cc, push, tally);
        }
        CLOCK_MARK(mark);
        __syncthreads();
        const bool done = sq.next >= total;  // read before any new take
        flush(f, jobs, count, tb, cc, sq, best, tally);
        CLOCK_ADD(CLOCK_FLUSH, mark);
        CLOCK_COUNT(N_FLUSHES);
        if (done) return;
    }
}

// pruned_period's row gate (uniform weights; widths whose template is its
// box, L = d, and whose stride lets a row's ends span at most 4 runs): before
// the scan, each lane bounds a row of 32 consecutive shifts of one job by the
// one-piece bound over all of them, and the rows that cannot hold a shift
// passing the depth filter and that bound are not scanned (K2-like: 37 % of
// the deep shifts; NOTES.md steps 85-86). coarse_pass and everything after
// it are the same: a skipped row holds no shift the scan would queue (debug
// checks it); depth_pass is counted with the seeds.
//
// A row's windows' sums of u lie in [u_lo, u_hi], from the least and largest
// prefix sum pu over the runs (GATE_SPAN samples) its starts and its ends
// fall in; so k = kscale u / (w0 d) lies in [k_lo, k_hi] (in real numbers;
// slack covers the coarse stage's k taken from the flux sums: e_s, and 1e-9
// of w0 d for its fma); every window's centred squares are at most those of
// the row's union, widened to whole runs; and the bound's gain 2 k lin' +
// k R - k^2 A' is concave in k, so its largest value over [k_lo, k_hi] is at
// one point. The margins (1e-12, 1e-9) are far above the roundings.
#define GATE_SPAN 32
#define GATE_LEVELS 2  // levels of run extremes: over 1 and 2 runs (two of a level cover up to 4 runs)

// The least and largest pu over samples x .. y (at most 2^GATE_LEVELS runs)
// from two overlapping entries of one level.
__device__ __forceinline__ void run_range(const double *lo, const double *hi, int runs, int x, int y, double &l,
                                          double &h)
{
    const int rx = x / GATE_SPAN, ry = y / GATE_SPAN, level = min(31 - __clz(ry - rx + 1), GATE_LEVELS - 1);
    const int ro = ry - (1 << level) + 1;
    const double l1 = lo[level * runs + rx], l2 = lo[level * runs + ro];
    const double h1 = hi[level * runs + rx], h2 = hi[level * runs + ro];
    l = l1 < l2 ? l1 : l2;
    h = h1 > h2 ? h1 : h2;
}

// One job's constants for the row gate.
struct RowGate {
    double to_k, k_deep, slack, half_ap, ap, e_v2, floor, k_min, c1, e_ar1, q1;
    int stride, d, length, start, n_shifts, gated;

    __device__ void set(const Job &j, double w0, int prune_min)
    {
        const double w0d = w0 * j.d;
        to_k = j.kscale / w0d;
        k_deep = fma(-j.s_max, j.rd * j.kscale, j.kscale);  // the least k of a box the filter passes
        slack = j.e.e_s + 1e-9 * w0d;
        ap = j.a2c * (1.0 - COARSE_PAD);
        half_ap = ap > 0.0 ? 0.5 / ap : 0.0;
        e_v2 = 2.0 * j.e.e_v;
        floor = j.floor;
        k_min = COARSE_DEPTH * j.kscale;
        c1 = j.c1; e_ar1 = j.e.e_ar1; q1 = j.q1;
        stride = j.stride; d = j.d; length = j.length; start = j.start; n_shifts = j.n_shifts;
        gated = j.length == j.d && j.length >= prune_min && ap > 0.0 && k_deep > 0.0 &&
                (31 * j.stride + GATE_SPAN - 1) / GATE_SPAN + 1 <= 1 << GATE_LEVELS;  // a row's ends' runs
    }

    // Whether the row of shifts s0 .. s1 may hold a shift that passes the
    // depth filter and the one-piece bound. lo, hi: GATE_LEVELS levels of
    // ``runs`` extremes; at_run, at2_run: pu, pu2 at the runs' starts.
    __device__ __forceinline__ bool may_win(const double *lo, const double *hi, int runs, const double *at_run,
                                            const double *at2_run, int m, int s0, int s1) const
    {
        const int a = s0 * stride, z = s1 * stride;
        double start_lo, start_hi, end_lo, end_hi;
        run_range(lo, hi, runs, a, z, start_lo, start_hi);
        run_range(lo, hi, runs, a + d, z + d, end_lo, end_hi);
        const double u_hi = end_hi - start_lo + slack, u_lo = end_lo - start_hi - slack;
        const double k_hi = u_hi * to_k * (1.0 + 1e-12);
        if (k_hi < k_deep * (1.0 - 1e-9)) return false;  // no shift passes the depth filter
        const double k_from = u_lo * to_k * (1.0 - 1e-12), k_lo = k_from > k_deep ? k_from : k_deep;
        if (k_lo < k_min) return true;
        // the union's centred squares, from the run tables (a row's first shift starts a run: shifts of
        // a job start at multiples of PERIOD_TAKE); 1 / n from below
        const int e_run = (z + length + GATE_SPAN - 1) / GATE_SPAN, r_a = a / GATE_SPAN;
        const double su = at_run[e_run] - at_run[r_a];
        const double inv_n = __frcp_rz((float)(min(GATE_SPAN * e_run, m) - a));
        const double var = (at2_run[e_run] - at2_run[r_a]) - su * su * inv_n * (1.0 - 1e-12);
        const double lin = (c1 >= 0.0 ? c1 * u_hi : c1 * u_lo) + e_ar1;
        const double x = 2.0 * (lin + COARSE_PAD * fabs(lin)) + sqrt_above(q1 * ((var > 0.0 ? var : 0.0) + e_v2));
        const double k_top = x * half_ap, k = k_top < k_lo ? k_lo : k_top > k_hi ? k_hi : k_top;
        return !(k * x - k * k * ap + 1e-9 * (fabs(k * x) + k * k * ap) < floor);  // NaN: may win
    }
};

// The row gate's mask pq.gate of jobs[0 .. count) (starts set): bit r of
// word w for row 32 w + r, set where the row may hold a survivor (every bit
// where the tables do not fit in the survivor list's place, free until the
// scan, or the rows in the mask). Every thread of the block calls it; the
// caller's barrier publishes the mask.
__device__ void row_gate(const double *pu, const double *pu2, int m, const Job *jobs, int count, double w0,
                         int prune_min, PeriodQueues &pq)
{
    const int rows_total = (jobs[count - 1].start + jobs[count - 1].n_shifts + 31) / 32;
    const int runs = m / GATE_SPAN + 1;  // run r: pu[r GATE_SPAN .. + GATE_SPAN), r GATE_SPAN <= m
    const bool gate = rows_total <= 32 * GATE_WORDS &&
                      (2 * GATE_LEVELS + 2) * runs * 8 + 16 + count * (int)sizeof(RowGate) <= (int)sizeof(pq.survivor);
    for (int q = threadIdx.x; q < GATE_WORDS; q += BLOCK) pq.gate[q] = gate ? 0u : ~0u;
    if (!gate) return;
    double *lo = (double *)pq.survivor, *hi = lo + GATE_LEVELS * runs;
    double *at_run = hi + GATE_LEVELS * runs, *at2_run = at_run + runs + 1;
    RowGate *rg = (RowGate *)(at2_run + runs + 1);
    if (threadIdx.x < count) rg[threadIdx.x].set(jobs[threadIdx.x], w0, prune_min);
    // level 0: two lanes a run, each over half of it, lanes skewed so that their loads miss each other's banks
    if (threadIdx.x - threadIdx.x % 32 < 2 * runs) {
        const int r = threadIdx.x / 2, from = r * GATE_SPAN + threadIdx.x % 2 * (GATE_SPAN / 2);
        double l = INFINITY, h = -INFINITY;
#pragma unroll
        for (int k = 0; k < GATE_SPAN / 2; ++k) {
            const int i = from + (k + threadIdx.x) % (GATE_SPAN / 2);
            const double x = i <= m ? pu[i] : l;
            l = x < l ? x : l;
            h = i <= m && x > h ? x : h;
        }
        const double l2 = __shfl_xor_sync(0xffffffffu, l, 1), h2 = __shfl_xor_sync(0xffffffffu, h, 1);
        if (threadIdx.x % 2 == 0 && r < runs) {
            lo[r] = l2 < l ? l2 : l;
            hi[r] = h2 > h ? h2 : h;
            at_run[r] = pu[r * GATE_SPAN];
            at2_run[r] = pu2[r * GATE_SPAN];
        }
    }
    if (threadIdx.x == 0) {
        at_run[runs] = pu[m];
        at2_run[runs] = pu2[m];
    }
    for (int level = 1; level < GATE_LEVELS; ++level) {  // over 2^level runs: two of the level below
        __syncthreads();
        const int half = 1 << (level - 1);
        const double *lo_b = lo + (level - 1) * runs, *hi_b = hi + (level - 1) * runs;
        for (int r = threadIdx.x; r < runs; r += BLOCK) {
            const int r2 = min(r + half, runs - 1);
            lo[level * runs + r] = lo_b[r] < lo_b[r2] ? lo_b[r] : lo_b[r2];
            hi[level * runs + r] = hi_b[r] > hi_b[r2] ? hi_b[r] : hi_b[r2];
        }
    }
    __syncthreads();
    int q = 0;
    for (int row = threadIdx.x; row - threadIdx.x % 32 < rows_total; row += BLOCK) {  // a mask word a warp
        bool may = false;
        if (row < rows_total) {
            q = job_of_entry(rg, q, 32 * row);
            const RowGate &j = rg[q];
            const int s0 = 32 * row - j.start;
            may = s0 < j.n_shifts &&
                  (!j.gated || j.may_win(lo, hi, runs, at_run, at2_run, m, s0, min(s0 + 31, j.n_shifts - 1)));
        }
        const unsigned word = __ballot_sync(0xffffffffu, may);
        if (threadIdx.x % 32 == 0) pq.gate[row / 32] = word;
    }
}

// pruned_period's cascade over a period's shifts of jobs[0 .. count), listed
// one job after another (job g's shifts are entries jobs[g].start ..
// + n_shifts; starts padded): warp w takes every (BLOCK / 32)-th take from
// its w-th (straight-line takes cost about what a shared counter's did, whose
// round trip was ~10 % of the stall samples: K2-like kernel -4 %), then the
// last TAIL_TAKES takes from a shared counter, so that warps whose fine
// rounds took longer do fewer of them (K2-like kernel 7.77 -> 7.55 ms), its
// job in registers, EAGER (uniform weights) PERIOD_AT_ONCE eager shifts per
// thread, else one lazy shift (both eager spilled the STAGE_CLOCKS build;
// A2 in the bounds is the job's a2c either way: pruned_period's folds have
// no pw, pw2), through the depth filter and the one-piece bound into its own
// ring, and whenever 32 are there through the K-piece bound into the block's
// survivor list: no barrier, and no shared atomic but the survivors' (a block
// queue flushed by the block's barriers: K2-like kernel 8.34 -> 7.77 ms on an
// H100). When that list could overflow, and at the end, the block computes
// their exact gains. Every thread of the block calls it.
template <bool EAGER>
__device__ __forceinline__ void scan_period(const Fold &f, const Job *jobs, int count, const Tables &tb,
                                            const Cascade &cc, PeriodQueues &pq, Best &best, Tally &tally)
{
    const int total = jobs[count - 1].start + jobs[count - 1].n_shifts;
    int *ring = pq.ring[threadIdx.x / 32];
    int head = 0, tail = 0;  // the warp's ring: its shifts waiting for the K-piece bound
    const auto push = [&](const bool *keep, const int *entry) {
        tail = push_ring<EAGER ? PERIOD_AT_ONCE : 1>(ring, tail, keep, entry);
        for (; tail - head >= 32; head += 32) {
            CLOCK_MARK(round_mark);
            fine_round<true>(f, jobs, tb, cc, ring, head, 32, pq, tally);
            CLOCK_ADD(CLOCK_ROUNDS, round_mark);
        }
    };
    const int tail_start = max(0, (total + PERIOD_TAKE - 1) / PERIOD_TAKE - TAIL_TAKES) * PERIOD_TAKE;
    const auto drawn = [&]() {  // a take of the tail, from the shared counter
        int first = 0;
        if (threadIdx.x % 32 == 0) first = atomicAdd(&pq.next, PERIOD_TAKE);
        return tail_start + __shfl_sync(0xffffffffu, first, 0);
    };
    Job one = jobs[0];  // the warp's job (read from shared memory per take: +2 %)
    int g = 0;
    int mine = threadIdx.x / 32 * PERIOD_TAKE;  // the warp's next take
    if (mine >= tail_start) mine = drawn();
    for (;;) {
        while (mine < total && *(volatile int *)&pq.n_survivors <= CHUNK - SURVIVOR_ROOM) {
            if (mine >= one.start + one.n_shifts) {  // takes only grow
                g = job_of_entry(jobs, g, mine);
                one = jobs[g];
            }
            if (EAGER && ROW_GATE) {  // the take's rows from the gate's mask (row_gate)
                constexpr unsigned ALL = (1u << PERIOD_GRAB) - 1;
                const unsigned pass = mine / 1024 < GATE_WORDS ? pq.gate[mine / 1024] >> (mine / 32 % 32) & ALL : ALL;
                take<true, PERIOD_GRAB, PERIOD_AT_ONCE, false, true>(
                    f, one, g, mine - one.start, cc, push, tally, cc.debug ? ALL : pass, ~pass & ALL);
            } else {
                take<true, PERIOD_GRAB, EAGER ? PERIOD_AT_ONCE : 1, false>(f, one, g, mine - one.start, cc,
                                                                                   push, tally);
            }
            mine = mine + BLOCK / 32 * PERIOD_TAKE < tail_start ? mine + BLOCK / 32 * PERIOD_TAKE : drawn();
        }
        CLOCK_MARK(flush_mark);
        const bool done = __syncthreads_and(mine >= total);
        CLOCK_MARK(mark);
        if (done) {
            fine_round<false>(f, jobs, tb, cc, ring, head, tail - head, pq, tally);
            __syncthreads();
        }
        CLOCK_ADD(CLOCK_FINE, mark);
        exact_groups<EXACT_UNROLL>(f, jobs, pq.survivor, pq.n_survivors, best, tally);
        __syncthreads();
        CLOCK_ADD(CLOCK_EXACT, mark);
        if (threadIdx.x == 0) {
            pq.n_survivors = 0;
            if (done) pq.next = 0;  // the next group's tail
        }
        __syncthreads();
        CLOCK_ADD(CLOCK_FLUSH, flush_mark);
        CLOCK_COUNT(N_FLUSHES);
        if (done) return;
    }
}

// Work counts of a block.
struct Counts {
    unsigned long long passed, queued, survived, violations, macs, seeds;
};

struct CountsAdd {
    __device__ Counts operator()(const Counts &a, const Counts &b) const
    {
        return {a.passed + b.passed, a.queued + b.queued, a.survived + b.survived, a.violations + b.violations,
                a.macs + b.macs, a.seeds + b.seeds};
    }
};

// The block's counts into the launch's counters (synchronises the block);
// ``seeds``: this thread's seeds (warp_seeds counts them on each group's first lane);
// tally.passed: pruned_period's depth passes (its seeds'; pruned_scan's none:
// pruned_seed counts them).
__device__ void add_counts(const Tally &tally, unsigned long long seeds, unsigned long long *counters)
{
    typedef cub::BlockReduce<Counts, BLOCK> Reduce;
    __shared__ typename Reduce::TempStorage temp;
    const Counts sum = Reduce(temp).Reduce(
        Counts{tally.passed, tally.queued, tally.survived, tally.violations, tally.macs, seeds}, CountsAdd());
    if (threadIdx.x == 0) {
        if (sum.passed) atomicAdd(counters + DEPTH_PASS, sum.passed);
        atomicAdd(counters + COARSE_PASS, sum.queued);
        atomicAdd(counters + FINE_PASS, sum.survived);
        atomicAdd(counters + EXACT_MACS, sum.macs);
        atomicAdd(counters + VIOLATIONS, sum.violations);
        if (sum.seeds) atomicAdd(counters + SEED_DOTS, sum.seeds);
    }
    __syncthreads();
}

// Running sums of one sample that a period's prefix arrays hold: flux, u,
// u^2, then (k - m / 2) u (pj, the global layout), then w, w^2 with weights that differ (pw, pw2).
template <int N>
struct Sums {
    double v[N];
};

struct SumsAdd {
    template <int N>
    __device__ Sums<N> operator()(const Sums<N> &a, const Sums<N> &b) const
    {
        Sums<N> s;
#pragma unroll
        for (int i = 0; i < N; ++i) s.v[i] = a.v[i] + b.v[i];
        return s;
    }
};

// The block scan of N running sums and the reduction of the threads' totals
// (|u|, w, w^2) that both prefix sums use, in one shared allocation.
template <int N>
struct PrefixBlock {
    typedef cub::BlockScan<Sums<N>, BLOCK, cub::BLOCK_SCAN_WARP_SCANS> Scan;
    typedef cub::BlockReduce<Sums<3>, BLOCK> Reduce;
    union Temp {
        typename Scan::TempStorage scan;
        typename Reduce::TempStorage reduce;
    };
    // scale = (U1 = sum|u|, U2 = u2, W1, W2); temp must be free of the scan
    __device__ static void scales(Temp &temp, const Sums<3> &totals, double u2, double *scale)
    {
        const Sums<3> sum = Reduce(temp.reduce).Reduce(totals, SumsAdd());
        if (threadIdx.x == 0) { scale[0] = sum.v[0]; scale[1] = u2; scale[2] = sum.v[1]; scale[3] = sum.v[2]; }
    }
};

// A sample's terms of the running sums, in Sums' order: flux f, u = (1 - f) w,
// u^2, then (k - m / 2) u with J (offset: k - m / 2), then w, w^2 with WEIGHTS.
template <bool J, bool WEIGHTS>
__device__ __forceinline__ Sums<3 + J + 2 * WEIGHTS> sample_terms(double2 fw, double offset)
{
    const double u = (1.0 - fw.x) * fw.y;
    Sums<3 + J + 2 * WEIGHTS> x;
    x.v[0] = fw.x; x.v[1] = u; x.v[2] = u * u;
    if constexpr (J) x.v[3] = offset * u;
    if constexpr (WEIGHTS) { x.v[3 + J] = fw.y; x.v[4 + J] = fw.y * fw.y; }
    return x;
}

// The terms of the totals both prefix sums reduce (|u|, w, w^2; scale) from a
// sample's terms and weight.
template <int N>
__device__ __forceinline__ Sums<3> total_terms(const Sums<N> &x, double w)
{
    return Sums<3>{{fabs(x.v[1]), w, w * w}};
}

// Sample k's running sums s into the prefix arrays at k + 1 (pj with J, pw and
// pw2 with WEIGHTS); k = -1 writes their zeros at 0.
template <bool J, bool WEIGHTS>
__device__ __forceinline__ void store_sums(const Sums<3 + J + 2 * WEIGHTS> &s, int k, double *cs, double *pu,
                                           double *pu2, double *pj, double *pw, double *pw2)
{
    cs[k + 1] = s.v[0]; pu[k + 1] = s.v[1]; pu2[k + 1] = s.v[2];
    if constexpr (J) pj[k + 1] = s.v[3];
    if constexpr (WEIGHTS) { pw[k + 1] = s.v[3 + J]; pw2[k + 1] = s.v[4 + J]; }
}

// One period's prefix sums in global memory (pruned_prefix), by the whole
// block, PREFIX_ITEMS samples per thread at a time: sample k < m has flux and
// weight sample(k) (.x, .y); writes rw[k] = u_k (and wf[k] = w_k unless null)
// and cs, pu, pu2, pj (pw and pw2 with WEIGHTS) at k + 1 (zero at 0); scale =
// (U1 = sum|u|, U2, W1, W2). The totals U1, W1, W2 are summed per thread and
// reduced once, not scanned.
template <bool WEIGHTS, typename Sample>
__device__ void prefix_sums(Sample sample, int m, double *rw, double *wf, double *cs, double *pu, double *pu2,
                            double *pw, double *pw2, double *pj, double *scale)
{
    constexpr int ITEMS = PREFIX_ITEMS, N = 4 + (WEIGHTS ? 2 : 0);
    typedef PrefixBlock<N> Block;
    __shared__ typename Block::Temp temp;
    const double origin = 0.5 * m;
    if (threadIdx.x == 0) store_sums<true, WEIGHTS>(Sums<N>{}, -1, cs, pu, pu2, pj, pw, pw2);
    Sums<N> carry = {};
    Sums<3> totals = {};  // |u|, w, w^2 of this thread's samples
    for (int start = 0; start < m; start += BLOCK * ITEMS) {
        Sums<N> x[ITEMS];
        const int base = start + threadIdx.x * ITEMS;
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) {
            const int k = base + r;
            const double2 fw = k < m ? sample(k) : make_double2(0.0, 0.0);  // past m: terms of zero
            if (WEIGHTS && wf && k < m) wf[k] = fw.y;
            x[r] = sample_terms<true, WEIGHTS>(fw, k - origin);
            totals = SumsAdd()(totals, total_terms(x[r], fw.y));
        }
        double u[ITEMS];  // the scan replaces x with its running sums
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) u[r] = x[r].v[1];
        Sums<N> total;
        typename Block::Scan(temp.scan).InclusiveScan(x, x, SumsAdd(), total);
#pragma unroll
        for (int r = 0; r < ITEMS; ++r) {
            const int k = base + r;
            if (k < m) {
                rw[k] = u[r];
                store_sums<true, WEIGHTS>(SumsAdd()(carry, x[r]), k, cs, pu, pu2, pj, pw, pw2);
            }
        }
        carry = SumsAdd()(carry, total);
        __syncthreads();  // temp is reused by the next tile
    }
    Block::scales(temp, totals, carry.v[2], scale);
}

// The block primitives' storage of every prefix_sums_runs pruned_period
// calls, one allocation (each instantiation's own would add up in its static
// memory).
union RunsTemp {
    PrefixBlock<3>::Temp t3;
    PrefixBlock<4>::Temp t4;
};

// prefix_sums for a fold in shared memory (pruned_period; pj with J; no
// prefix sums of w, whose totals W1, W2 still go into scale): each
// thread scans its own contiguous run of samples twice, its totals first,
// then, from the block's exclusive scan of them, its prefix sums: one block
// scan for the whole fold instead of one per tile of BLOCK x ITEMS samples
// (K2-like kernel -1.7 % against tiles of 4 per thread; in global memory the
// runs' loads would not coalesce). In place as prefix_sums (a run's samples
// are read before the run is written).
template <bool J, typename Sample>
__device__ void prefix_sums_runs(Sample sample, int m, double *rw, double *cs, double *pu, double *pu2,
                                 double *pj, double *scale, RunsTemp &storage)
{
    constexpr int N = 3 + J;
    typedef PrefixBlock<N> Block;
    typename Block::Temp &temp = reinterpret_cast<typename Block::Temp &>(storage);
    const double origin = 0.5 * m;
    const int run = (m + BLOCK - 1) / BLOCK, first = min(m, threadIdx.x * run), last = min(m, first + run);
    Sums<N> own = {};
    Sums<3> totals = {};  // |u|, w, w^2 of this thread's samples
    for (int k = first; k < last; ++k) {
        const double2 fw = sample(k);
        const Sums<N> x = sample_terms<J, false>(fw, k - origin);
        own = SumsAdd()(own, x);
        totals = SumsAdd()(totals, total_terms(x, fw.y));
    }
    Sums<N> s, total;
    typename Block::Scan(temp.scan).ExclusiveScan(own, s, Sums<N>{}, SumsAdd(), total);
    for (int k = first; k < last; ++k) {
        const Sums<N> x = sample_terms<J, false>(sample(k), k - origin);
        s = SumsAdd()(s, x);
        rw[k] = x.v[1];
        store_sums<J, false>(s, k, cs, pu, pu2, pj, nullptr, nullptr);
    }
    if (threadIdx.x == 0) store_sums<J, false>(Sums<N>{}, -1, cs, pu, pu2, pj, nullptr, nullptr);
    __syncthreads();  // temp is reused
    Block::scales(temp, totals, total.v[2], scale);
}

// The Tables argument list of a kernel, and the struct made of it.
#define TABLE_PARAMS                                                                              \
    const int *widths, const int *strides, const long long *offsets, const double *a,             \
        const double *kscale, const double *sum_a2, const double *overshoot,                      \
        const int *n_pieces, const int *bounds, const double *inv_n, const double *c,             \
        const double *c2, const double *rho_q, const double *rho2, const double *mean,            \
        const double *amax, const double *sum_c, const double *s_max, const int *line_bounds,     \
        const double *line_c, const double *line_slope,                                           \
        const double *line_centre, const double *line_rho_q, const double *line_terms, int k_max, \
        int k_lines
#define TABLES {widths, strides, offsets, a, kscale, sum_a2, overshoot, n_pieces, bounds, inv_n, c, \
                c2, rho_q, rho2, mean, amax, sum_c, s_max, line_bounds, line_c, line_slope,         \
                line_centre, line_rho_q, line_terms, k_max, k_lines}

// Period b's arrays in global memory (laid out by pruned_fold and pruned_prefix;
// w, pw, pw2 null with uniform weights; pj null where not needed).
__device__ __forceinline__ Fold global_fold(int b, int m, const double *rw, const double *w,
                                            const double *cs, const double *pu, const double *pu2,
                                            const double *pw, const double *pw2, const double *pj)
{
    const size_t fb = (size_t)b * m, pb = (size_t)b * (m + 1);
    return {rw + fb, w ? w + fb : nullptr, cs + pb, pu + pb, pu2 + pb, w ? pw + pb : nullptr,
            w ? pw2 + pb : nullptr, pj ? pj + pb : nullptr, 0.5 * m};
}

// One block per period b: order (n, at b * n) gets the period's sample
// indices in (phase, index) order, as the cpu backend's stable sort gives
// them; keys (n, at b * n) only for bucket_sort_n's crowded fallback (phases
// are recomputed from the times, which stay in cache, instead of read from
// it), the bucket counts (nb <= n of them) in dynamic shared memory, and with
// pruned_fold_shared the indices too (sorted there, then copied out: the
// insertion sorts' dependent loads from shared memory, not L2).
template <bool ORDER_SHARED>
__device__ __forceinline__ void fold_order(const double *t, int n, int nb, const double *periods, double *keys,
                                           int *order)
{
    const size_t at = (size_t)blockIdx.x * n;
    int *count = (int *)smem, *idx = ORDER_SHARED ? count + nb : order + at;
    const double period = periods[blockIdx.x];
    for (int i = threadIdx.x; i < n; i += BLOCK) idx[i] = i;
    __syncthreads();
    bucket_sort_n([=](int i) { return fold_phase(__ldg(t + i), period); }, keys + at, idx, n, count, nb);
    if (ORDER_SHARED)
        for (int i = threadIdx.x; i < n; i += BLOCK) order[at + i] = idx[i];
}

// 32 registers: two 1,024-thread blocks per SM
extern "C" __global__ void __launch_bounds__(BLOCK, 2048 / BLOCK)
pruned_fold(const double *t, int n, int nb, const double *periods, double *keys, int *order)
{
    fold_order<false>(t, n, nb, periods, keys, order);
}

extern "C" __global__ void __launch_bounds__(BLOCK, 2048 / BLOCK)
pruned_fold_shared(const double *t, int n, int nb, const double *periods, double *keys, int *order)
{
    fold_order<true>(t, n, nb, periods, keys, order);
}

// One block per period: the patched fold (m samples: sample k is y and w of
// order[k % n], w null: w_uniform each) gathered as it is summed into rw = u
// = (1 - f) w (m) and the prefix sums cs, pu, pu2, pj and, unless w is null
// (uniform weights), the folded weights wf (m) and pw, pw2 (m + 1 each, at
// b * (m + 1)); scales[4 b ..] = (U1, U2, W1, W2). One sample per thread at
// a time, four blocks per SM (78-day curve: 13.4 -> 8.3 ms from two samples,
// two blocks).
extern "C" __global__ void __launch_bounds__(BLOCK, PREFIX_BLOCKS_PER_SM)
pruned_prefix(const double *y, const double *w, const int *order, double w_uniform, int n, int m, double *rw,
              double *wf, double *cs, double *pu, double *pu2, double *pw, double *pw2, double *pj,
              double *scales)
{
    const int b = blockIdx.x;
    const int *idx = order + (size_t)b * n;
    const size_t fb = (size_t)b * m, pb = (size_t)b * (m + 1);
    if (w)
        prefix_sums<true>(
            [=](int k) { const int i = __ldg(idx + k % n); return make_double2(__ldg(y + i), __ldg(w + i)); },
            m, rw + fb, wf + fb, cs + pb, pu + pb, pu2 + pb, pw + pb, pw2 + pb, pj + pb, scales + 4 * b);
    else
        prefix_sums<false>(
            [=](int k) { return make_double2(__ldg(y + __ldg(idx + k % n)), w_uniform); },
            m, rw + fb, nullptr, cs + pb, pu + pb, pu2 + pb, nullptr, nullptr, pj + pb, scales + 4 * b);
}

// The seeds of period b (warp_seeds) and its depth_pass, one block of SEED_BLOCK threads, from
// a copy of its cumulative flux in shared memory where it fits (in_shared: 8
// (m + 1) bytes, TESS-size folds), else from global memory. A block per
// (period, width) instead took 6.5 ms of the 78-day search's seeds, not 4.5
// (NOTES.md step 42).
extern "C" __global__ void __launch_bounds__(SEED_BLOCK)
pruned_seed(const double *rw, const double *w, const double *cs, int m, int n, const int *lo, const int *hi,
            int in_shared, TABLE_PARAMS, double w_uniform, unsigned long long *threshold,
            unsigned long long *counters)
{
    __shared__ unsigned long long top;
    const int b = blockIdx.x;
    const double *from = cs + (size_t)b * (m + 1);
    if (in_shared) {
        for (int i = threadIdx.x; i <= m; i += SEED_BLOCK)  // every load in flight at once (cp.async), not one per step
            __pipeline_memcpy_async(smem + i, from + i, sizeof(double));
        __pipeline_commit();
    }
    if (threadIdx.x == 0) top = 0;
    __pipeline_wait_prior(0);
    __syncthreads();
    const size_t fb = (size_t)b * m;
    const Fold f = {rw + fb, w ? w + fb : nullptr, in_shared ? smem : from, nullptr, nullptr, nullptr, nullptr,
                    nullptr, 0.5 * m};
    const Tables tb = TABLES;
    unsigned long long seeds = 0, macs = 0;
    unsigned deep = 0;
    warp_seeds<32>(f, lo[b], hi[b] - lo[b], m, n, tb, w_uniform, SEED_BLOCK / 32, &top, seeds, macs, deep);
    for (int o = 16; o > 0; o >>= 1) deep += __shfl_xor_sync(0xffffffffu, deep, o);
    if (threadIdx.x % 32 == 0 && deep) atomicAdd(counters + DEPTH_PASS, (unsigned long long)deep);
    if (seeds) {
        atomicAdd(counters + SEED_DOTS, seeds);
        atomicAdd(counters + EXACT_MACS, macs);
    }
    __syncthreads();
    if (threadIdx.x == 0) threshold[b] = top;
}

// One block per group of widths of one period: the widths group_start[k] ..
// group_start[k + 1] - 1 (at most SCAN_JOBS consecutive widths of one stride,
// so their interleaved takes cover the same samples; group_of: a width's
// group, and n_groups for the width past the last) within the period's window
// [lo, hi); `groups` blocks per period.
// The cascade over their shifts (scan_group); job_* get the block's best fit
// (gain 0, index -1 for none).
extern "C" __global__ void __launch_bounds__(BLOCK, SCAN_BLOCKS_PER_SM)
pruned_scan(const double *rw, const double *w, const double *cs, const double *pu,
            const double *pu2, const double *pw, const double *pw2, const double *pj, const double *scales,
            int m, int n, const int *lo, const int *hi, int groups, const int *group_of,
            const int *group_start, TABLE_PARAMS, double w_uniform, double w_least, double g, double pad,
            int prune_min, int fine_min, const unsigned long long *threshold, int debug, double *job_gain,
            int *job_index, double *job_depth, unsigned long long *counters)
{
    __shared__ Job jobs[SCAN_JOBS];
    __shared__ ScanQueues sq;
    const int id = blockIdx.x, b = id / groups, k = group_of[lo[b]] + id % groups;
    int first = 0, count = 0;
    if (hi[b] > lo[b] && k <= group_of[hi[b] - 1]) {
        first = max(group_start[k], lo[b]);
        count = min(group_start[k + 1], hi[b]) - first;
    }
    if (count <= 0) {  // past the period's widths
        if (threadIdx.x == 0) { job_gain[id] = 0.0; job_index[id] = -1; job_depth[id] = 0.0; }
        return;
    }
    CLOCK_MARK(mark);
    const Tables tb = TABLES;
    if (threadIdx.x < count)
        jobs[threadIdx.x] = cascade_job(first + threadIdx.x, m, n, tb, w_uniform, w_least, scales + 4 * b,
                                        threshold[b], g, pad, true);
    if (threadIdx.x == 0) { sq.n_queue = 0; sq.n_survivors = 0; }
    __syncthreads();
    const Cascade cc = {pad, prune_min, fine_min, debug, w_uniform};
    Best best = {0.0, 0.0, -1, 0x7fffffff};
    Tally tally = {0, 0, 0, 0, 0};
    scan_group(global_fold(b, m, rw, w, cs, pu, pu2, pw, pw2, pj), jobs, count, tb, cc, sq, best, tally);
    CLOCK_ADD(CLOCK_COARSE, mark);  // the whole block: the flushes' share is taken out on the host
    add_counts(tally, 0, counters);
    reduce_best(best, job_gain + id, job_index + id, job_depth + id);
}

// One block per period b, everything in shared memory (dynamic, in doubles:
// rw, cs, pu, pu2, then with uniform weights and ``line`` pj, with weights
// that differ w, whose A2 the bounds take as its least a2c, without the pw,
// pw2 of the global layout; pruned.py's shared_doubles): fold and bucket sort
// (keys in pu, counts and order in pu2, the flux staged in rw), flux and
// weights gathered into cs + 1 and w, prefix sums in place, the seeds (a warp
// per width, a half-warp where the widths outnumber the warps), then the
// cascade over the period's widths W_GROUP at a time, its K-piece bound
// linear where the fold has pj (as the global layout's), else constant; gain,
// index, depth of period b.
#if PERIOD_KERNEL
static_assert(CHUNK > SURVIVOR_ROOM, "pruned_period: no room for a flush's survivors (raise CHUNK)");
static_assert(32 % PERIOD_GRAB == 0, "pruned_period: a take's rows lie in one word of the row gate's mask");
extern "C" __global__ void __launch_bounds__(BLOCK, BLOCK < 512 ? 512 / BLOCK : 1)  // 128 registers
pruned_period(const double *t, const double *y, const double *w, int n, int m,
              const double *periods, const int *lo, const int *hi, TABLE_PARAMS,
              double w_uniform, double w_least, double g, double pad, int prune_min, int fine_min, int debug,
              int line, double *gain_out, int *index_out, double *depth_out, unsigned long long *counters)
{
    __shared__ Job jobs[W_GROUP];
    __shared__ PeriodQueues pq;
    __shared__ double scale[4];
    __shared__ unsigned long long threshold;
    const int b = blockIdx.x;
    const bool uniform = w_uniform > 0.0;
    CLOCK_MARK(mark);
    double *rw = smem, *cs = rw + m, *pu = cs + (m + 1), *pu2 = pu + (m + 1);
    double *pj = line && uniform ? pu2 + (m + 1) : nullptr;  // the host asks for it with uniform weights only
    double *wv = uniform ? nullptr : pu2 + (m + 1);
    {
        double *key = pu;
        int *count = (int *)pu2, *idx = count + n;
        const double period = periods[b];
        // y into rw's place (free until the prefix sums), in flight while the phases are computed, so that the
        // gather below reads shared memory, not L2 (K2-like fold -12 %)
        for (int i = threadIdx.x; i < n; i += BLOCK) __pipeline_memcpy_async(rw + i, y + i, sizeof(double));
        __pipeline_commit();
        for (int i = threadIdx.x; i < n; i += BLOCK) {
            key[i] = fold_phase(t[i], period);
            idx[i] = i;
        }
        __pipeline_wait_prior(0);
        __syncthreads();
        CLOCK_ADD(CLOCK_FOLD, mark);
        bucket_sort_n(key, idx, n, count, n);
        CLOCK_ADD(CLOCK_SORT, mark);
        for (int k = threadIdx.x; k < m; k += BLOCK) {
            const int src = idx[k % n];
            cs[k + 1] = rw[src];
            if (!uniform) wv[k] = w[src];
        }
        if (threadIdx.x == 0) { threshold = 0; pq.n_survivors = 0; pq.next = 0; }
        __syncthreads();
    }
    CLOCK_ADD(CLOCK_GATHER, mark);
    {
        __shared__ RunsTemp temp;
        const auto flux_uniform = [=](int k) { return make_double2(cs[k + 1], w_uniform); };
        const auto flux_weight = [=](int k) { return make_double2(cs[k + 1], wv[k]); };
        if (pj)
            prefix_sums_runs<true>(flux_uniform, m, rw, cs, pu, pu2, pj, scale, temp);
        else if (uniform)
            prefix_sums_runs<false>(flux_uniform, m, rw, cs, pu, pu2, nullptr, scale, temp);
        else
            prefix_sums_runs<false>(flux_weight, m, rw, cs, pu, pu2, nullptr, scale, temp);
    }
    __syncthreads();
    CLOCK_ADD(CLOCK_PREFIX, mark);

    const Tables tb = TABLES;
    const Fold f = {rw, wv, cs, pu, pu2, nullptr, nullptr, pj, 0.5 * m};
    const int first_width = lo[b], n_widths = hi[b] - first_width;
    Tally tally = {0, 0, 0, 0, 0};
    unsigned long long seeds = 0;
    if (n_widths > BLOCK / 32)  // half-warps: half the rounds of widths (K2-like: one, not two; seeds -10 %)
        warp_seeds<16>(f, first_width, n_widths, m, n, tb, w_uniform, BLOCK / 32, &threshold, seeds, tally.macs,
                       tally.passed);
    else
        warp_seeds<32>(f, first_width, n_widths, m, n, tb, w_uniform, BLOCK / 32, &threshold, seeds, tally.macs,
                       tally.passed);
    __syncthreads();
    CLOCK_ADD(CLOCK_SEEDS, mark);

    const Cascade cc = {pad, prune_min, fine_min, debug, w_uniform};
    Best best = {0.0, 0.0, -1, 0x7fffffff};
    for (int g0 = 0; g0 < n_widths; g0 += W_GROUP) {
        const int count = min(W_GROUP, n_widths - g0);
        if (threadIdx.x < count)
            jobs[threadIdx.x] = cascade_job(first_width + g0 + threadIdx.x, m, n, tb, w_uniform, w_least, scale,
                                            threshold, g, pad, f.pj != nullptr);
        __syncthreads();
        if (threadIdx.x == 0)
            for (int q = 0, s = 0; q < count; s += padded<PERIOD_TAKE>(jobs[q].n_shifts), ++q) jobs[q].start = s;
        __syncthreads();
        if (ROW_GATE && uniform) {
            CLOCK_ADD(CLOCK_COARSE, mark);
            row_gate(pu, pu2, m, jobs, count, w_uniform, prune_min, pq);
            __syncthreads();
            CLOCK_ADD(CLOCK_GATE, mark);
        }
        if (uniform)
            scan_period<true>(f, jobs, count, tb, cc, pq, best, tally);
        else
            scan_period<false>(f, jobs, count, tb, cc, pq, best, tally);
    }
    CLOCK_ADD(CLOCK_COARSE, mark);  // the flushes' share is taken out on the host
    add_counts(tally, seeds, counters);
    reduce_best(best, gain_out + b, index_out + b, depth_out + b);
}
#endif
