// The exact chi2 scan with a float16 tensor-core screen (a study for issue 12,
// uniform weights; scripts/tensor_screen_study.py --gpu runs it).
//
// One block per period: the fold (pruned's bucket sort, bucket_sort.cuh, in
// shared memory; its order also to global memory for the re-checks), prefix
// sums of F and |u| and u in float16 by runs of samples, then the scan. Per
// (width, tile of 128 strided shifts) a warp forms
// AR for the tile's shifts as one m16n8k16 matrix product per 16 template
// samples: A[r, j] = u16[s0 + 8 S r + j] (the fold's Hankel rows, read from
// shared memory as half2 pairs, always even-aligned), B[j, c] = a16[j - S c]
// (the template banded over 8 sub-shifts, prepared on the host in fragment
// order), D[r, c] = AR(s0 + S (8 r + c)). Each listed shift's gain
// G = 2 k AR - k^2 A2 gets the pad 2 |k| E, E = e_coef (sum |u| over the
// tile's samples) + e_abs (the study's docstring derives both); shifts whose
// upper gain reaches the block's running best lower gain are kept in their
// warp's list (compacted against the running lower gain when full: it only
// rises), and after the scan those reaching the final one are re-checked in
// float64 (a warp per shift). The best is the largest re-checked gain, ties
// to the lowest width index, then the lowest shift, as the cpu backend. The
// screen's k uses 1 / d for the division: the few ulps it moves the gain are
// in tiny_rel's share of the pad.
#include <cuda_fp16.h>
#include <cub/block/block_scan.cuh>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef CAP
#define CAP 1024  // kept shifts a block holds, CAP / WARPS a warp; past it the period is flagged
#endif
#ifndef TPJ
#define TPJ 2  // tiles a warp's job takes: they share each k-step's B fragment
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1
#endif
#define WARPS (THREADS / 32)
#define BLOCK THREADS
#include "bucket_sort.cuh"  // backends/cuda: the fold's order, as pruned sorts it
#define GATE_SLACK (1.0 - 0x1p-40)  // the gate's double rounding, many times over
#define CAPW (CAP / WARPS)
#define TILE 128
#define MAXW 64

struct Width {  // a period's allowed width, as its jobs read it
    int d, S, ns, K, boff;
    double smax, ks, a2, inv, ecoef, eabs, rd;
};

struct Top {  // a re-checked shift
    double gain;
    int wi, i;
};

__device__ __forceinline__ bool better(const Top &x, const Top &y)
{
    return x.gain > y.gain || (x.gain == y.gain && (x.wi < y.wi || (x.wi == y.wi && x.i < y.i)));
}

// Drops the warp's kept shifts whose upper gain is below ``lower`` (keeping
// their order); returns how many are left. Each round reads 32 entries before
// writing any, and writes only at or below what it read.
__device__ int compact(int *iw, float *ub, int count, unsigned long long lower_bits, int lane, unsigned below)
{
    const double lower = __longlong_as_double((long long)lower_bits);
    int left = 0;
    for (int c0 = 0; c0 < count; c0 += 32) {
        const int c = c0 + lane;
        const int x = c < count ? iw[c] : 0;
        const float y = c < count ? ub[c] : -1.0f;
        const bool keep = c < count && y >= lower;
        const unsigned vote = __ballot_sync(0xffffffffu, keep);
        __syncwarp();
        if (keep) {
            iw[left + __popc(vote & below)] = x;
            ub[left + __popc(vote & below)] = y;
        }
        __syncwarp();
        left += __popc(vote);
    }
    return left;
}

struct Pair {  // prefix sums of F and of |u|
    double f, a;
};

struct PairAdd {
    __device__ __forceinline__ Pair operator()(const Pair &x, const Pair &y) const { return {x.f + y.f, x.a + y.a}; }
};

// Period p's fold in shared memory: the phases' order (also to order_g, for
// the re-checks), cs = prefix sums of F, au = prefix sums of |u| (m + 1
// each), u2 = u uscale in float16 (mp halves, zero past m). Each thread scans
// its own run of samples twice (totals, a block scan, then its prefix sums),
// F staged in au's place and read one sample ahead of the write over it.
__device__ void fold_period(const double *t, const double *y, double w, int n, int m, int mp, double uscale,
                            double period, int *order_g, double *cs, double *au, __half *u16)
{
    {
        double *key = au;
        int *count = reinterpret_cast<int *>(cs), *idx = count + n;
        for (int i = threadIdx.x; i < n; i += THREADS) {
            key[i] = fold_phase(t[i], period);
            idx[i] = i;
        }
        __syncthreads();
        bucket_sort_n(key, idx, n, count, n);
        for (int k = threadIdx.x; k < n; k += THREADS) order_g[k] = idx[k];
        for (int k = threadIdx.x; k < m; k += THREADS) au[k] = y[idx[k % n]];
        __syncthreads();
    }
    typedef cub::BlockScan<Pair, THREADS> Scan;
    __shared__ typename Scan::TempStorage scan;
    const int run = (m + THREADS - 1) / THREADS, first = min(m, (int)threadIdx.x * run), last = min(m, first + run);
    Pair own = {0.0, 0.0};
    for (int k = first; k < last; ++k) own = PairAdd()(own, {au[k], fabs((1.0 - au[k]) * w)});
    double next = first < last ? au[first] : 0.0;
    Pair s;
    Scan(scan).ExclusiveScan(own, s, Pair{0.0, 0.0}, PairAdd());
    __syncthreads();  // every run's first sample is in a register before any is written over
    for (int k = first; k < last; ++k) {
        const double f = next, u = (1.0 - f) * w;
        next = k + 1 < last ? au[k + 1] : 0.0;
        s = PairAdd()(s, {f, fabs(u)});
        cs[k + 1] = s.f;
        au[k + 1] = s.a;
        u16[k] = __double2half(u * uscale);
    }
    for (int k = m + threadIdx.x; k < mp; k += THREADS) u16[k] = __double2half(0.0);
    if (threadIdx.x == 0) cs[0] = au[0] = 0.0;
    __syncthreads();
}

extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
tc_search(const double *__restrict__ t, const double *__restrict__ y, double w_uniform, int n, int m, int mp,
          double uscale, const double *__restrict__ periods, int *__restrict__ order_all,
          const int *__restrict__ lo, const int *__restrict__ nd,
          const int *__restrict__ wd, const int *__restrict__ ws, const int *__restrict__ wn,
          const int *__restrict__ wk, const double *__restrict__ s_max, const double *__restrict__ kscale,
          const double *__restrict__ a2, const double *__restrict__ e_coef, const double *__restrict__ e_abs,
          const double *__restrict__ inv_scale, const long long *__restrict__ b_off,
          const unsigned *__restrict__ bfrag, const long long *__restrict__ a_off, const double *__restrict__ a,
          double tiny_rel, double *gain_out, int *width_out, int *shift_out, int *kept_out, int *rechecked_out,
          int *screened_out)
{
    extern __shared__ __align__(16) unsigned char smem[];
    double *cs = reinterpret_cast<double *>(smem);  // m + 1: prefix sums of F
    double *au = cs + (m + 1);                      // m + 1: prefix sums of |u|
    __half *u16 = reinterpret_cast<__half *>(au + (m + 1));  // mp: u * uscale
    const unsigned *u2 = reinterpret_cast<const unsigned *>(u16);
    __shared__ int tiles[MAXW + 1];
    __shared__ Width slot[MAXW];
    __shared__ int cand_iw[CAP];  // wi << 24 | shift
    __shared__ float cand_ub[CAP];  // upper gains rounded up: compared with lower gains only
    __shared__ int n_kept, overflow;
    __shared__ unsigned long long lower_bits;
    __shared__ Top red[WARPS];

    const int p = blockIdx.x, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int *order = order_all + (size_t)p * n;
    fold_period(t, y, w_uniform, n, m, mp, uscale, periods[p], order, cs, au, u16);
    const int wlo = lo[p], n_w = nd[p];
    for (int q = tid; q < n_w; q += THREADS) {
        const int wi = wlo + q;
        Width &w = slot[q];
        w.d = wd[wi]; w.S = ws[wi]; w.ns = wn[wi]; w.K = wk[wi]; w.boff = (int)b_off[wi];
        w.smax = s_max[wi]; w.ks = kscale[wi]; w.a2 = a2[wi]; w.inv = inv_scale[wi];
        w.ecoef = e_coef[wi]; w.eabs = e_abs[wi]; w.rd = 1.0 / w.d;
    }
    if (tid == 0) {
        int acc = 0;
        for (int q = 0; q < n_w; ++q) {
            tiles[q] = acc;
            acc += (wn[wlo + q] + TILE * TPJ - 1) / (TILE * TPJ);
        }
        tiles[n_w] = acc;
        n_kept = overflow = 0;
        lower_bits = 0ull;
    }
    __syncthreads();

    volatile unsigned long long *lower_v = &lower_bits;
    const int total = tiles[n_w], g = lane >> 2, tg = lane & 3;
    const unsigned below = (1u << lane) - 1u;
    int *my_iw = cand_iw + warp * CAPW;
    float *my_ub = cand_ub + warp * CAPW;
    int count = 0, kept = 0, screened = 0;  // the warp's list, all it ever took, tiles past the gate
    double lb = 0.0;
    int q = 0;
    for (int job = warp; job < total; job += WARPS) {
        while (tiles[q + 1] <= job) ++q;  // jobs only move forward
        const Width &w = slot[q];
        const int wi = wlo + q, tile0 = (job - tiles[q]) * TPJ, d = w.d, S = w.S, K = w.K;
        const uint2 *bf = reinterpret_cast<const uint2 *>(bfrag + w.boff) + lane;
        const unsigned *ua = u2 + ((tile0 * TILE * S + 8 * S * g + 2 * tg) >> 1);
        const int row8 = 32 * S, next = 64 * S;  // words: rows g + 8, the next tile
        float c[TPJ][4] = {};
#pragma unroll 2
        for (int kk = 0; kk < K; ++kk) {
            const uint2 b = __ldg(bf + 32 * kk);
#pragma unroll
            for (int tt = 0; tt < TPJ; ++tt) {
                const unsigned *x = ua + tt * next + 8 * kk;
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                             "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(c[tt][0]), "+f"(c[tt][1]), "+f"(c[tt][2]), "+f"(c[tt][3])
                             : "r"(x[0]), "r"(x[row8]), "r"(x[4]), "r"(x[row8 + 4]), "r"(b.x), "r"(b.y));
            }
        }
        const double smax = w.smax, rd = w.rd, ks = w.ks, a2w = w.a2, inv2 = 2.0 * w.inv;
        const int ns = w.ns;
#pragma unroll
        for (int tt = 0; tt < TPJ; ++tt) {
            const int tile = tile0 + tt, s0 = min(tile * TILE * S, m);  // a spare tile has no listed shift
            const double e = w.ecoef * (au[min(s0 + TILE * S + d, m)] - au[s0]) + w.eabs, e2 = 2.0 * e;
            const double lower = __longlong_as_double((long long)*lower_v);
            // k-free gate: 2 k AR - k^2 A2 <= max(AR, 0)^2 / A2 for every k, so a tile
            // whose largest AR + e cannot reach the lower gain holds no shift that can
            const double top = fmax(fmax(c[tt][0], c[tt][1]), fmax(c[tt][2], c[tt][3])) * w.inv + e;
            if (!__any_sync(0xffffffffu, top > 0.0 && top * top >= lower * a2w * GATE_SLACK)) continue;
            ++screened;
            double ub[4];
            bool any = false;
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                const int s = tile * TILE + 8 * (g + 8 * (h >> 1)) + 2 * tg + (h & 1), i = s * S;
                ub[h] = -1.0;
                if (s < ns) {
                    const double sum = cs[i + d] - cs[i];
                    if (sum <= smax) {
                        const double k = (1.0 - sum * rd) * ks;
                        const double x = k * ((double)c[tt][h] * inv2), y = k * (k * a2w);
                        const double gh = x - y, pad = fabs(k) * e2 + tiny_rel * (fabs(x) + 2.0 * y);
                        ub[h] = gh + pad;
                        lb = fmax(lb, gh - pad);
                    }
                }
                any |= ub[h] >= lower;  // lower >= 0: no gain <= 0 wins
            }
            if (lb > lower) atomicMax(&lower_bits, (unsigned long long)__double_as_longlong(lb));
            if (!__any_sync(0xffffffffu, any)) continue;
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                const bool take = ub[h] >= lower;
                const unsigned vote = __ballot_sync(0xffffffffu, take);
                if (!vote) continue;
                const int n_new = __popc(vote);
                if (count + n_new > CAPW) count = compact(my_iw, my_ub, count, *lower_v, lane, below);
                if (count + n_new > CAPW) {  // flagged: the period's result is not to be used
                    if (lane == 0) overflow = 1;
                } else {
                    if (take) {
                        const int at = count + __popc(vote & below);
                        my_iw[at] = wi << 24 | (tile * TILE + 8 * (g + 8 * (h >> 1)) + 2 * tg + (h & 1)) * S;
                        my_ub[at] = __double2float_ru(ub[h]);
                    }
                    count += n_new;
                }
                kept += n_new;
            }
        }
    }
    __syncthreads();

    const double lower = __longlong_as_double((long long)lower_bits);
    if (lane == 0) {
        atomicAdd(&n_kept, kept);
        atomicAdd(&screened_out[p], screened);
    }
    Top best = {0.0, -1, 0};
    int rechecked = 0;
    for (int c = 0; c < count; ++c) {
        if (my_ub[c] < lower) continue;
        const int i = my_iw[c] & 0xFFFFFF, wi = my_iw[c] >> 24;
        const double *aa = a + a_off[wi];
        const int len = (int)(a_off[wi + 1] - a_off[wi]), d = wd[wi];
        double dot = 0.0;
        for (int j = lane; j < len; j += 32) dot += aa[j] * ((1.0 - y[order[(i + j) % n]]) * w_uniform);
        for (int o = 16; o; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const double k = (1.0 - (cs[i + d] - cs[i]) / d) * kscale[wi];
        const Top x = {2.0 * k * dot - k * k * a2[wi], wi, i};
        if (better(x, best)) best = x;
        ++rechecked;
    }
    if (lane == 0) red[warp] = best;
    if (lane == 0) atomicAdd(&rechecked_out[p], rechecked);
    __syncthreads();
    if (tid == 0) {
        for (int w = 1; w < WARPS; ++w)
            if (better(red[w], best)) best = red[w];
        gain_out[p] = best.gain;
        width_out[p] = best.wi;
        shift_out[p] = best.i;
        kept_out[p] = overflow ? -1 : n_kept;
    }
}
