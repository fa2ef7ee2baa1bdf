// The chi2 scan with float32 dot products, shared by simple and thrust.
//
// Why it is fast: each thread scores SHIFTS_PER_THREAD consecutive shifts of
// one width, sliding a register ring along the template (one shared-memory
// load per array per template tap for all its shifts); a width of stride S is
// scanned as S stride-1 correlations of its polyphase parts
// (x_u[k] = x[S k + u] against a_u[q] = a[S q + u]), so every stride uses the
// ring. Shared arrays are skewed (one pad slot every SHIFTS_PER_THREAD
// entries) so the 32 lanes of a warp, SHIFTS_PER_THREAD entries apart, hit 32
// distinct banks. Only tiles with a shift passing the depth filter are
// scored, dealt to the warps in (width, shift) order (scan_phased).
//
// What stays float64: the box depth (cumulative flux, exact filter decision),
// the depth and the gain formed from the float32 sums; the host forms chi2.
// Its divisions go through div_rn (exact: reciprocal and corrections), so
// the 8 box depths of a tile and their loads overlap; with '/' each one waited
// for the previous one's slow-path check.
#pragma once
#include <cub/block/block_scan.cuh>

#include "tls_common.cuh"

#ifndef SHIFTS_PER_THREAD
#define SHIFTS_PER_THREAD 8
#endif
#define SPT SHIFTS_PER_THREAD

// Templates in polyphase order as float32 (a, a*a) tap pairs, two taps per
// float4: phase u of width wi starts at tap offset[wi] + u * taps[wi]; taps[wi]
// (a multiple of SPT) is ceil(length / stride) rounded up, padded with zeros.
struct PhaseTemplates {
    const float4 *ta;
    const int *offset;
    const int *taps;
};

__device__ __forceinline__ int skewed(int k) { return k + k / SPT; }

// Entries per phase of a stride-S polyphase array of m samples: room for the
// ring's reads past the last shift (never more than m / S + 2 SPT - 1).
__device__ __forceinline__ int phase_length(int m, int S)
{
    return ((m + S - 1) / S + 3 * SPT) / SPT * SPT;
}

// Ascending bitonic network over n (any) (key, index) entries, padded
// virtually with +inf: every comparator puts the smaller entry first, so the
// padding never moves and comparators that reach it are skipped.
template <class Index>
__device__ void bitonic_sort_n(double *key, Index *idx, int n)
{
    int n2 = 1;
    while (n2 < n) n2 <<= 1;
    for (int k = 2; k <= n2; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int q = threadIdx.x; q < n2 / 2; q += BLOCK) {
                const int off = q & (j - 1);
                const int lo = (q - off) * 2 + off;
                // first step of a merge: mirror partner; later steps: lo + j
                const int hi = j == k >> 1 ? (lo - off) + k - 1 - off : lo + j;
                if (hi < n && key_less(key[hi], idx[hi], key[lo], idx[lo])) {
                    double tk = key[lo]; key[lo] = key[hi]; key[hi] = tk;
                    const Index ti = idx[lo]; idx[lo] = idx[hi]; idx[hi] = ti;
                }
            }
            __syncthreads();
        }
    }
}

// Polyphase, skewed float32 copies of rw and w for stride S (zeros past m);
// src(p, rw, w) gives sample p < m of the patched fold.
template <class Src>
__device__ void fill_phases(float *xr, float *xw, int m, int S, Src src)
{
    const int pl = phase_length(m, S);
    for (int e = threadIdx.x; e < S * pl; e += BLOCK) {
        const int u = e / pl;
        const int p = (e - u * pl) * S + u;
        float r = 0.0f, v = 0.0f;
        if (p < m) src(p, r, v);
        xr[skewed(e)] = r;
        xw[skewed(e)] = v;
    }
}

// Box depths of the shifts s0 .. s0 + SPT - 1 (positions S * s) of width d;
// true if any of them passes the depth filter.
template <class Csum>
__device__ __forceinline__ bool box_depths(double *box, Csum csum, int S, int d, int s0,
                                           int n_shifts, const TemplateSet &tp)
{
    const double rd = __drcp_rn((double)d);
    bool any = false;
#pragma unroll
    for (int r = 0; r < SPT; ++r) {
        const int i = min(s0 + r, n_shifts - 1) * S;
        box[r] = 1.0 - div_rn(csum(i + d) - csum(i), d, rd);
        any |= s0 + r < n_shifts && box[r] > tp.depth_min;
    }
    return any;
}

// One thread's tile: shifts s0 .. s0 + SPT - 1 (positions S * s) of width wi,
// given their box depths, one of which passes the depth filter.
__device__ __forceinline__ void scan_tile(Best &best, const double *box, const float *xr,
                                          const float *xw, int S, int pl, int wi, int s0,
                                          int n_shifts, double rsd, const TemplateSet &tp,
                                          const PhaseTemplates &pt)
{
    float ar[SPT], a2[SPT];
#pragma unroll
    for (int r = 0; r < SPT; ++r) { ar[r] = 0.0f; a2[r] = 0.0f; }
    const int taps = pt.taps[wi];
    for (int u = 0; u < S; ++u) {
        // x[u * pl + s0 + c] sits at base[c + c / SPT]: s0 and pl are multiples of SPT
        const float *rbase = xr + skewed(u * pl + s0);
        const float *wbase = xw + skewed(u * pl + s0);
        const float4 *tq = pt.ta + (pt.offset[wi] + u * taps) / 2;
        float rr[SPT], rv[SPT];  // ring: slot c % SPT holds x[s0 + q + c] at tap q
#pragma unroll
        for (int r = 0; r < SPT; ++r) { rr[r] = rbase[r]; rv[r] = wbase[r]; }
        for (int q0 = 0; q0 < taps; q0 += SPT) {
            const float *rq = rbase + q0 + q0 / SPT;
            const float *wq = wbase + q0 + q0 / SPT;
#pragma unroll
            for (int jj = 0; jj < SPT; jj += 2) {
                const float4 t2 = __ldg(tq + (q0 + jj) / 2);
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int j = jj + h;
                    const float aj = h ? t2.z : t2.x;
                    const float aj2 = h ? t2.w : t2.y;
#pragma unroll
                    for (int r = 0; r < SPT; ++r) {
                        ar[r] = fmaf(aj, rr[(j + r) % SPT], ar[r]);
                        a2[r] = fmaf(aj2, rv[(j + r) % SPT], a2[r]);
                    }
                    rr[j] = rq[j + SPT + 1];  // x[s0 + q0 + j + SPT], skewed
                    rv[j] = wq[j + SPT + 1];
                }
            }
        }
    }
    const double ov = tp.overshoot[wi];
#pragma unroll
    for (int r = 0; r < SPT; ++r)
        if (s0 + r < n_shifts && box[r] > tp.depth_min)
            offer(best, box[r], ar[r], a2[r], ov, tp, wi, (s0 + r) * S, rsd);
}

__device__ __forceinline__ int tile_count(int m, int d, int S) { return ((m - d) / S + SPT) / SPT; }

// TILE_ROUND > 0: tiles a round examines per thread (the round's list of
// passing tiles, TILE_ROUND * BLOCK ints of static shared memory, must leave
// two simple blocks per SM). 0: warps take chunks of 32 tiles as they come
// (thrust: its cumulative flux is in global memory, and computing a tile's box
// depths twice cost more than idle lanes, H200).
#ifndef TILE_ROUND
#define TILE_ROUND 4
#endif
#define TILE_BITS 20  // list entry: (width index << TILE_BITS) | tile

// This thread's share of one period's scan over widths [lo, hi): per run of
// widths with one stride, fill the polyphase arrays, then score its tiles in
// (width, tile) order, so each thread offers in TLS's order. With rounds, a
// round checks the depth filter of the next TILE_ROUND * BLOCK tiles, lists
// the passing ones in order (block prefix sum) and deals them to the warps 32
// at a time, so no lane idles beside a failing tile (~30 % of K2's tiles).
// csum(p) is the cumulative flux (float64) at p.
template <class Csum, class Src>
__device__ Best scan_phased(float *xr, float *xw, Csum csum, Src src, int m, int lo, int hi,
                            const TemplateSet &tp, const PhaseTemplates &pt)
{
    Best best = {0.0, 0.0, -1, 0x7fffffff};
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const double rsd = __drcp_rn(tp.signal_depth);
    for (int g0 = lo, g1; g0 < hi; g0 = g1) {
        const int S = tp.strides[g0];
        int total = 0;
        for (g1 = g0; g1 < hi && tp.strides[g1] == S; ++g1) total += tile_count(m, tp.widths[g1], S);
        __syncthreads();  // the previous stride's tiles are done with the arrays
        fill_phases(xr, xw, m, S, src);
        __syncthreads();
        const int pl = phase_length(m, S);
        int wi = g0, first = 0;  // cursor: first tile of width wi in the run
        int tiles = tile_count(m, tp.widths[wi], S);
        auto seek = [&](int c) {
            while (c >= first + tiles && wi + 1 < g1) {
                first += tiles;
                tiles = tile_count(m, tp.widths[++wi], S);
            }
        };
#if TILE_ROUND
        __shared__ int list[TILE_ROUND * BLOCK];
        typedef cub::BlockScan<int, BLOCK> ListScan;
        __shared__ typename ListScan::TempStorage list_scan;
        for (int base = 0; base < total; base += TILE_ROUND * BLOCK) {
            unsigned pass = 0;
            int entry[TILE_ROUND];
#pragma unroll
            for (int k = 0; k < TILE_ROUND; ++k) {
                const int c = base + threadIdx.x * TILE_ROUND + k;
                seek(c);
                double box[SPT];
                entry[k] = (wi << TILE_BITS) | (c - first);
                if (c < total && box_depths(box, csum, S, tp.widths[wi], (c - first) * SPT,
                                            (m - tp.widths[wi]) / S + 1, tp))
                    pass |= 1u << k;
            }
            int before, listed;  // the block's passing tiles before this thread's, and in all
            ListScan(list_scan).ExclusiveSum(__popc(pass), before, listed);
#pragma unroll
            for (int k = 0; k < TILE_ROUND; ++k)
                if (pass >> k & 1u) list[before++] = entry[k];
            __syncthreads();
            for (int e = warp * 32 + lane; e - lane < listed; e += BLOCK) {
                if (e < listed) {
                    const int tw = list[e] >> TILE_BITS, s0 = (list[e] & ((1 << TILE_BITS) - 1)) * SPT;
                    const int n_shifts = (m - tp.widths[tw]) / S + 1;
                    double box[SPT];
                    box_depths(box, csum, S, tp.widths[tw], s0, n_shifts, tp);
                    scan_tile(best, box, xr, xw, S, pl, tw, s0, n_shifts, rsd, tp, pt);
                }
            }
            __syncthreads();  // list and list_scan are reused by the next round
        }
#else
        for (int c0 = warp * 32; c0 < total; c0 += BLOCK) {
            const int c = c0 + lane;
            seek(c);
            const int n_shifts = (m - tp.widths[wi]) / S + 1, s0 = (c - first) * SPT;
            double box[SPT];
            if (c < total && box_depths(box, csum, S, tp.widths[wi], s0, n_shifts, tp))
                scan_tile(best, box, xr, xw, S, pl, wi, s0, n_shifts, rsd, tp, pt);
        }
#endif
    }
    return best;
}
