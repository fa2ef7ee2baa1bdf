// pruned: TLS's exact statistic with the certified pruning cascade of
// backends/pruning.py (the same cascade as the cpu backend), float64 throughout,
// every per-period array in global memory, so any n.
//
// pruned_fold: per period, the float64 fold, bucket sort (bucket_sort.cuh on
//   global scratch) and the patched flux and weights in phase order;
// pruned_prefix: per period, the cumulative flux and prefix sums of
//   u = (1 - f) w, u^2, w, w^2, and the scales U1 = sum|u|, U2, W1, W2 the
//   rounding allowances need;
// pruned_seed: per (period, width slot), the exact gain at the deepest box; the
//   period's threshold T is the largest (atomicMax on the bits of a positive double);
// pruned_scan: per job (one width of one period, CHUNK shifts at a time): depth
//   filter and one-piece bound per shift, survivors
//   compacted into a shared queue, K-piece bound per queued shift, survivors
//   compacted again, then one warp per survivor for the exact dot products;
//   the job's first best fit by TLS's total order (tls_common.cuh);
// reduce_jobs (job_reduce.cuh): per period, the first best job.
// Jobs need no list from the host: block j of a launch over a batch is width
// slot j % W of period j / W, W = the batch's largest number of allowed
// widths; a slot past the period's widths is an empty job (gain 0).
// Work counters (backends.pruning.COUNTERS) are summed with integer atomics,
// so they are deterministic.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include "bucket_sort.cuh"
#include "job_reduce.cuh"

#ifndef CHUNK
#define CHUNK (8 * BLOCK)
#endif
#define PREFIX_ITEMS 2
#ifndef SCAN_BLOCKS_PER_SM
#define SCAN_BLOCKS_PER_SM (1024 / BLOCK)  // 64 registers, no spills: fastest of 2, 3, 4 blocks (NOTES.md)
#endif

// counter slots, as backends.pruning.COUNTERS
enum { SHIFTS, DEPTH_PASS, COARSE_PASS, FINE_PASS, SEED_DOTS, EXACT_MACS, BRUTE_MACS, VIOLATIONS };

// One block per period b: key, idx, count (n each, at b * n) are scratch;
// f_out, w_out (m each, at b * m): the flux and weight of the patched fold in
// (phase, index) order, as the cpu backend's stable sort gives it.
extern "C" __global__ void __launch_bounds__(BLOCK)
pruned_fold(const double *t, const double *y, const double *w, int n, int m,
            const double *periods, double *keys, int *order, int *counts, double *f_out,
            double *w_out)
{
    const int b = blockIdx.x;
    double *key = keys + (size_t)b * n;
    int *idx = order + (size_t)b * n;
    const double period = periods[b];
    for (int i = threadIdx.x; i < n; i += BLOCK) {
        key[i] = fold_phase(t[i], period);
        idx[i] = i;
    }
    __syncthreads();
    bucket_sort_n(key, idx, n, counts + (size_t)b * n);
    double *f_b = f_out + (size_t)b * m, *w_b = w_out + (size_t)b * m;
    for (int k = threadIdx.x; k < m; k += BLOCK) {
        const int src = idx[k % n];
        f_b[k] = y[src];
        w_b[k] = w[src];
    }
}

// Running sums of one sample: flux, u, u^2, w, w^2, |u|.
struct Sums {
    double f, u, u2, w, w2, au;
};

struct SumsAdd {
    __device__ Sums operator()(const Sums &a, const Sums &b) const
    {
        return {a.f + b.f, a.u + b.u, a.u2 + b.u2, a.w + b.w, a.w2 + b.w2, a.au + b.au};
    }
};

// One block per period: from the folded flux and weights (m each, at b * m),
// rw = u = (1 - f) w (m) and the prefix sums cs, pu, pu2, pw, pw2 (m + 1
// each, at b * (m + 1)); scales[4 b ..] = (U1, U2, W1, W2).
extern "C" __global__ void __launch_bounds__(BLOCK, 512 / BLOCK)
pruned_prefix(const double *f, const double *w, int m, double *rw, double *cs, double *pu,
              double *pu2, double *pw, double *pw2, double *scales)
{
    typedef cub::BlockScan<Sums, BLOCK, cub::BLOCK_SCAN_WARP_SCANS> Scan;
    __shared__ typename Scan::TempStorage temp;
    const int b = blockIdx.x;
    const double *f_b = f + (size_t)b * m, *w_b = w + (size_t)b * m;
    double *rw_b = rw + (size_t)b * m;
    const size_t out = (size_t)b * (m + 1);
    if (threadIdx.x == 0) {
        cs[out] = 0.0; pu[out] = 0.0; pu2[out] = 0.0; pw[out] = 0.0; pw2[out] = 0.0;
    }
    Sums carry = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (int start = 0; start < m; start += BLOCK * PREFIX_ITEMS) {
        Sums x[PREFIX_ITEMS];
        const int base = start + threadIdx.x * PREFIX_ITEMS;
#pragma unroll
        for (int r = 0; r < PREFIX_ITEMS; ++r) {
            const int k = base + r;
            const double fk = k < m ? f_b[k] : 1.0, v = k < m ? w_b[k] : 0.0;
            const double u = (1.0 - fk) * v;
            if (k < m) rw_b[k] = u;
            x[r] = {k < m ? fk : 0.0, u, u * u, v, v * v, fabs(u)};
        }
        Sums total;
        Scan(temp).InclusiveScan(x, x, SumsAdd(), total);
#pragma unroll
        for (int r = 0; r < PREFIX_ITEMS; ++r) {
            const int k = base + r;
            if (k < m) {
                const Sums s = SumsAdd()(carry, x[r]);
                cs[out + k + 1] = s.f; pu[out + k + 1] = s.u; pu2[out + k + 1] = s.u2;
                pw[out + k + 1] = s.w; pw2[out + k + 1] = s.w2;
            }
        }
        carry = SumsAdd()(carry, total);
        __syncthreads();  // temp is reused by the next tile
    }
    if (threadIdx.x == 0) {
        scales[4 * b] = carry.au; scales[4 * b + 1] = carry.u2;
        scales[4 * b + 2] = carry.w; scales[4 * b + 3] = carry.w2;
    }
}

// Shifts scanned of width d on a patched fold of m samples (n real ones):
// shifts at and past n repeat earlier ones when the stride is 1 (cpu: shift_end).
__device__ __forceinline__ int shift_count(int m, int n, int d, int stride)
{
    const int end = stride == 1 ? min(m - d + 1, n) : m - d + 1;
    return (end - 1) / stride + 1;
}

// What a scan of one (period, width) reads: the period's folded arrays and
// prefix sums, the width's template and piece tables, the period's scales.
struct Width {
    const double *rw, *w, *cs, *pu, *pu2, *pw, *pw2;
    const double *a;  // template (1 - signal), length L
    int d, stride, length, n_shifts;
    double kscale, a2u;  // k = box * kscale; A2 = a2u with uniform weights (0: not uniform)
};

__device__ __forceinline__ Width width_of(int b, int wi, int m, int n, const double *rw,
                                          const double *w, const double *cs, const double *pu,
                                          const double *pu2, const double *pw, const double *pw2,
                                          const int *widths, const int *strides,
                                          const long long *offsets, const double *a,
                                          const double *kscale, const double *sum_a2,
                                          double w_uniform)
{
    Width x;
    const size_t fb = (size_t)b * m, pb = (size_t)b * (m + 1);
    x.rw = rw + fb; x.w = w + fb; x.cs = cs + pb;
    x.pu = pu + pb; x.pu2 = pu2 + pb; x.pw = pw + pb; x.pw2 = pw2 + pb;
    x.a = a + offsets[wi];
    x.d = widths[wi];
    x.stride = strides[wi];
    x.length = (int)(offsets[wi + 1] - offsets[wi]);
    x.n_shifts = shift_count(m, n, x.d, x.stride);
    x.kscale = kscale[wi];
    x.a2u = w_uniform * sum_a2[wi];
    return x;
}

// Box depth 1 - (sum of d fluxes) / d, the division rounded as '/' (div_rn,
// given rd = 1 / d), so every shift passes the depth filter as on the CPU.
__device__ __forceinline__ double box_depth(const Width &x, int i, double rd)
{
    return 1.0 - div_rn(x.cs[i + x.d] - x.cs[i], x.d, rd);
}

// The width slot a block serves: period b, width index wi; false for a slot
// past the period's allowed widths [lo[b], hi[b]).
__device__ __forceinline__ bool slot(int pair, int slots, const int *lo, const int *hi, int &b, int &wi)
{
    b = pair / slots;
    wi = lo[b] + pair % slots;
    return wi < hi[b];
}

// Exact gain of shift i, one thread (seeds' fallback and debug checks).
__device__ double thread_gain(const Width &x, int i, double k)
{
    double ar = 0.0, a2 = 0.0;
    for (int j = 0; j < x.length; ++j) {
        const double aj = __ldg(x.a + j);
        ar = fma(aj, x.rw[i + j], ar);
        if (x.a2u == 0.0) a2 = fma(aj * aj, x.w[i + j], a2);
    }
    return 2.0 * k * ar - k * k * (x.a2u > 0.0 ? x.a2u : a2);
}

// Exact gain of shift i by one warp (every lane returns it).
__device__ __forceinline__ double warp_gain(const Width &x, int i, double k)
{
    const int lane = threadIdx.x % 32;
    double ar = 0.0, a2 = 0.0;
    for (int j = lane; j < x.length; j += 32) {
        const double aj = __ldg(x.a + j);
        ar = fma(aj, x.rw[i + j], ar);
        if (x.a2u == 0.0) a2 = fma(aj * aj, x.w[i + j], a2);
    }
    for (int o = 16; o > 0; o >>= 1) {
        ar += __shfl_xor_sync(0xffffffffu, ar, o);
        a2 += __shfl_xor_sync(0xffffffffu, a2, o);
    }
    return 2.0 * k * ar - k * k * (x.a2u > 0.0 ? x.a2u : a2);
}

// Deepest box of one (period, width) pair, then its exact gain: the period's
// threshold is the largest such gain (0 if none is positive).
extern "C" __global__ void __launch_bounds__(BLOCK)
pruned_seed(const double *rw, const double *w, const double *cs, const double *pu,
            const double *pu2, const double *pw, const double *pw2, int m, int n,
            const int *lo, const int *hi, int slots, const int *widths,
            const int *strides, const long long *offsets, const double *a, const double *kscale,
            const double *sum_a2, double w_uniform, double depth_min,
            unsigned long long *threshold, unsigned long long *counters)
{
    struct Deepest { double box; int i; };
    typedef cub::BlockReduce<double, BLOCK> Sum;
    typedef cub::BlockReduce<Deepest, BLOCK> Max;
    __shared__ union { typename Sum::TempStorage sum; typename Max::TempStorage max; } temp;
    __shared__ Deepest deepest;
    int b, wi;
    if (!slot(blockIdx.x, slots, lo, hi, b, wi)) return;
    const Width x = width_of(b, wi, m, n, rw, w, cs, pu, pu2, pw, pw2, widths, strides, offsets,
                             a, kscale, sum_a2, w_uniform);
    const double rd = __drcp_rn((double)x.d);
    Deepest mine = {depth_min, -1};
    for (int s = threadIdx.x; s < x.n_shifts; s += BLOCK) {
        const double box = box_depth(x, s * x.stride, rd);
        if (box > mine.box) mine = {box, s * x.stride};
    }
    const Deepest top = Max(temp.max).Reduce(mine, [](const Deepest &p, const Deepest &q) {
        if (q.i < 0) return p;
        if (p.i < 0) return q;
        return (q.box > p.box || (q.box == p.box && q.i < p.i)) ? q : p;
    });
    if (threadIdx.x == 0) deepest = top;
    __syncthreads();
    if (deepest.i < 0) return;
    const int i = deepest.i;
    const double k = deepest.box * x.kscale;
    double ar = 0.0, a2 = 0.0;
    for (int j = threadIdx.x; j < x.length; j += BLOCK) {
        const double aj = __ldg(x.a + j);
        ar = fma(aj, x.rw[i + j], ar);
        if (x.a2u == 0.0) a2 = fma(aj * aj, x.w[i + j], a2);
    }
    ar = Sum(temp.sum).Sum(ar);
    __syncthreads();
    a2 = Sum(temp.sum).Sum(a2);
    if (threadIdx.x == 0) {
        const double gain = 2.0 * k * ar - k * k * (x.a2u > 0.0 ? x.a2u : a2);
        if (gain > 0.0) atomicMax(threshold + b, (unsigned long long)__double_as_longlong(gain));
        atomicAdd(counters + SEED_DOTS, 1ull);
        atomicAdd(counters + EXACT_MACS, (unsigned long long)x.length);
    }
}

// Rounding allowances of one (period, width), doubled (backends/pruning.py).
struct Allowances {
    double e_v, e_vw, e_ar1, e_ark, e_a21, e_a2k;
};

// mean: (mean a, mean a^2) of the width; sum_c: (sum c_p, sum c2_p) of its pieces.
__device__ Allowances allowances(const double *mean, const double *sum_c, double amax,
                                 const double *scale, double g, bool uniform)
{
    const double u1 = scale[0], u2 = scale[1], w1 = scale[2], w2 = scale[3];
    const double dots_ar = g * amax * u1, dots_a2 = uniform ? 0.0 : g * amax * amax * w1;
    Allowances e;
    e.e_v = 2.0 * (4.0 * g * u2 + 7.0 * g * u1 * u1);
    e.e_vw = 2.0 * (4.0 * g * w2 + 7.0 * g * w1 * w1);
    e.e_ar1 = 2.0 * (mean[0] * 4.0 * g * u1 + dots_ar);
    e.e_ark = 2.0 * (sum_c[0] * 4.0 * g * u1 + dots_ar);
    e.e_a21 = 2.0 * (mean[1] * 4.0 * g * w1 + dots_a2);
    e.e_a2k = 2.0 * (sum_c[1] * 4.0 * g * w1 + dots_a2);
    return e;
}

// Whether a shift's gain can reach ``floor``: its bound 2k UB_AR - k^2 LB_A2
// plus pad (2k |UB_AR| + k^2 LB_A2) (cpu: the same), UB_AR = mean + rho sqrt(V),
// tested without a square root: with S = rho sqrt(V) >= 0 and B the rest,
// the bound is at most 2k(1 + pad) S + B, so it is below floor iff
// R = floor - B > 0 and 4k^2 (1 + pad)^2 rho^2 V < R^2.
__device__ __forceinline__ bool may_win(double k, double mean, double var, double rho, double e_v,
                                        double e_ar, const Width &x, double mean_w, double var_w,
                                        double rho2, double e_vw, double e_a2, double pad,
                                        double floor)
{
    const double lb_a2 = x.a2u > 0.0 ? x.a2u
                                     : fmax(mean_w - rho2 * sqrt(fmax(var_w + e_vw, 0.0)) - e_a2, 0.0);
    const double lin = mean + e_ar;
    const double r = floor - (2.0 * k * lin + pad * 2.0 * k * fabs(lin) - k * k * lb_a2 * (1.0 - pad));
    if (!(r > 0.0)) return true;
    const double ks = 2.0 * k * (1.0 + pad) * rho;
    return ks * ks * fmax(var + e_v, 0.0) >= r * r;
}

// Append ``value`` to ``list`` (``count`` entries so far) where ``keep``: one
// shared atomic per warp (ballot), not per lane.
__device__ __forceinline__ void push(int *list, int *count, bool keep, int value)
{
    const unsigned active = __activemask();
    const unsigned votes = __ballot_sync(active, keep);
    if (!votes) return;
    const int lane = threadIdx.x % 32, leader = __ffs(votes) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(votes));
    base = __shfl_sync(active, base, leader);
    if (keep) list[base + __popc(votes & ((1u << lane) - 1))] = value;
}

// Sum c_p S_p and sum (Q_p - S_p^2 / n_p) over the pieces [i + b_p, i + b_{p+1}).
__device__ __forceinline__ void piece_sums(const int *bounds, const double *inv_n, const double *c,
                                           int n_pieces, const double *p1, const double *p2, int i,
                                           double &mean, double &var)
{
    mean = 0.0;
    var = 0.0;
    for (int p = 0; p < n_pieces; ++p) {
        const int b0 = i + bounds[p], b1 = i + bounds[p + 1];
        const double s = p1[b1] - p1[b0];
        mean = fma(c[p], s, mean);
        var += (p2[b1] - p2[b0]) - s * s * inv_n[p];
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK, SCAN_BLOCKS_PER_SM)
pruned_scan(const double *rw, const double *w, const double *cs, const double *pu,
            const double *pu2, const double *pw, const double *pw2, const double *scales,
            int m, int n, const int *lo, const int *hi, int slots,
            const int *widths, const int *strides, const long long *offsets, const double *a,
            const double *kscale, const double *sum_a2, const double *overshoot,
            const int *n_pieces, const int *bounds, const double *inv_n, const double *c,
            const double *c2, const double *rho, const double *rho2, const double *mean,
            const double *amax, const double *sum_c, int k_max, double w_uniform, double depth_min,
            double g, double pad, int prune_min, int fine_min, const unsigned long long *threshold,
            int debug, double *job_gain, int *job_index, double *job_depth,
            unsigned long long *counters)
{
    __shared__ int queue[CHUNK], survivor[CHUNK];
    __shared__ int n_queue, n_survivors;
    __shared__ unsigned long long passed, violations, direct_count, queued_total, survived_total;
    const int job = blockIdx.x;
    int b, wi;
    if (!slot(job, slots, lo, hi, b, wi)) {  // empty job
        if (threadIdx.x == 0) { job_gain[job] = 0.0; job_index[job] = -1; job_depth[job] = 0.0; }
        return;
    }
    const Width x = width_of(b, wi, m, n, rw, w, cs, pu, pu2, pw, pw2, widths, strides, offsets,
                             a, kscale, sum_a2, w_uniform);
    // the block's constants live in shared memory, not registers (no spills)
    __shared__ Allowances e;
    __shared__ double floor, inv_len, rd, c1, c12, r1, r12, rk, rk2;
    __shared__ int kp;
    if (threadIdx.x == 0) {
        e = allowances(mean + 2 * wi, sum_c + 2 * wi, amax[wi], scales + 4 * b, g, w_uniform > 0.0);
        const double t = __longlong_as_double((long long)threshold[b]);
        floor = t - pad * t;
        inv_len = 1.0 / x.length;
        rd = __drcp_rn((double)x.d);
        c1 = mean[2 * wi]; c12 = mean[2 * wi + 1];
        r1 = rho[2 * wi]; r12 = rho2[2 * wi]; rk = rho[2 * wi + 1]; rk2 = rho2[2 * wi + 1];
        kp = n_pieces[wi];
        passed = 0; violations = 0; direct_count = 0; queued_total = 0; survived_total = 0;
    }
    const bool uniform = w_uniform > 0.0;
    const bool direct = x.length < prune_min, fine = x.length >= fine_min;
    const int *bw = bounds + wi * (k_max + 1);
    const double *nw = inv_n + wi * k_max, *cw = c + wi * k_max, *c2w = c2 + wi * k_max;
    const double ov = overshoot[wi];
    Best best = {0.0, 0.0, -1, 0x7fffffff};
    unsigned long long my_passed = 0, my_direct = 0, my_violations = 0;

    // the width's shifts, CHUNK at a time (the queues' capacity)
    for (int first = 0; first < x.n_shifts; first += CHUNK) {
        if (threadIdx.x == 0) { n_queue = 0; n_survivors = 0; }
        __syncthreads();

        // one-piece bound per shift; survivors queued (in any order: the best
        // fit is chosen by TLS's total order). Short templates (direct) skip
        // the bounds: each thread evaluates its shifts in full. Debug: a
        // skipped shift whose exact gain reaches the floor is a violation.
        const int end = min(first + CHUNK, x.n_shifts);
        for (int s = first + threadIdx.x; s < end; s += BLOCK) {
            const int i = s * x.stride;
            const double box = box_depth(x, i, rd);
            const bool pass = box > depth_min;
            const double k = box * x.kscale;
            my_passed += pass;
            bool keep = pass && !direct && !(k > 0.0);
            if (pass && direct) {
                const double gain = thread_gain(x, i, k);
                const Best cand = {gain, 1.0 - box * ov, wi, i};
                if (gain > 0.0 && better(cand, best)) best = cand;
                ++my_direct;
            } else if (pass && !keep) {
                const double su = x.pu[i + x.length] - x.pu[i];
                const double vu = (x.pu2[i + x.length] - x.pu2[i]) - su * su * inv_len;
                double sw = 0.0, vw = 0.0;
                if (!uniform) {
                    sw = x.pw[i + x.length] - x.pw[i];
                    vw = (x.pw2[i + x.length] - x.pw2[i]) - sw * sw * inv_len;
                }
                keep = may_win(k, c1 * su, vu, r1, e.e_v, e.e_ar1, x, c12 * sw, vw, r12, e.e_vw,
                               e.e_a21, pad, floor);
                if (!keep && debug) my_violations += thread_gain(x, i, k) >= floor;
            }
            push(queue, &n_queue, keep, i);
        }
        __syncthreads();
        const int queued = n_queue;

        // K-piece bound per queued shift; survivors queued again
        for (int q = threadIdx.x; q < queued; q += BLOCK) {
            const int i = queue[q];
            const double k = box_depth(x, i, rd) * x.kscale;
            bool keep = direct || !fine || !(k > 0.0);
            if (!keep) {
                double mu, vu, mw = 0.0, vw = 0.0;
                piece_sums(bw, nw, cw, kp, x.pu, x.pu2, i, mu, vu);
                if (!uniform) piece_sums(bw, nw, c2w, kp, x.pw, x.pw2, i, mw, vw);
                keep = may_win(k, mu, vu, rk, kp * e.e_v, e.e_ark, x, mw, vw, rk2, kp * e.e_vw,
                               e.e_a2k, pad, floor);
            }
            if (!keep && debug) my_violations += thread_gain(x, i, k) >= floor;
            push(survivor, &n_survivors, keep, i);
        }
        __syncthreads();
        const int survivors = n_survivors;
        if (threadIdx.x == 0) { queued_total += queued; survived_total += survivors; }

        // exact gains, one warp per survivor
        for (int q = threadIdx.x / 32; q < survivors; q += BLOCK / 32) {
            const int i = survivor[q];
            const double box = box_depth(x, i, rd);
            const double gain = warp_gain(x, i, box * x.kscale);
            const Best cand = {gain, 1.0 - box * ov, wi, i};
            if (gain > 0.0 && better(cand, best)) best = cand;
        }
        __syncthreads();  // the queues are refilled by the next chunk
    }
    atomicAdd(&passed, my_passed);
    if (my_direct) atomicAdd(&direct_count, my_direct);
    if (my_violations) atomicAdd(&violations, my_violations);
    reduce_best(best, job_gain + job, job_index + job, job_depth + job);  // synchronises the block
    if (threadIdx.x == 0) {
        atomicAdd(counters + DEPTH_PASS, passed);
        atomicAdd(counters + COARSE_PASS, queued_total + direct_count);
        atomicAdd(counters + FINE_PASS, survived_total + direct_count);
        atomicAdd(counters + EXACT_MACS, (survived_total + direct_count) * x.length);
        atomicAdd(counters + VIOLATIONS, violations);
    }
}
