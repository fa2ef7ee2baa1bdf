// Device code shared by the PyCUDA kernels (basic, simple, thrust) and loadable
// by any other CUDA backend: the float64 fold, the exact chi2 scan of one
// period and the block-wide argmax with TLS's "first wins" tie rule.
//
// BLOCK (threads per block) is a compile-time macro so the reduction arrays
// are sized statically; the kernel cache compiles one module per value.
#pragma once

#ifndef BLOCK
#define BLOCK 128
#endif

// Sort key larger than any phase in [0, 1): pads a sort to a power of two.
#define PAD_KEY 2.0

// Phase rounded exactly as TLS's fastmath foldfast (and the cpu backend):
// x = t * (1 / period), phase = x - floor(x). __dmul_rn keeps the product
// rounded on its own (no FMA contraction), so samples whose phases tie
// mathematically (e.g. at P = span / 2) sort in TLS's order.
__device__ __forceinline__ double fold_phase(double t, double period)
{
    double x = __dmul_rn(t, 1.0 / period);
    return x - floor(x);
}

// (key, index) lexicographic order: unique keys make any sort stable.
__device__ __forceinline__ bool key_less(double ka, int ia, double kb, int ib)
{
    return ka < kb || (ka == kb && ia < ib);
}

// One compare-exchange step of a bitonic sort over n2 (power of two) entries
// held in any memory space; callers loop k, j and synchronise between steps.
__device__ __forceinline__ void bitonic_step(double *key, int *idx, int n2, int k, int j)
{
    for (int i = threadIdx.x; i < n2; i += BLOCK) {
        int partner = i ^ j;
        if (partner > i) {
            bool ascending = (i & k) == 0;
            bool swap = ascending ? key_less(key[partner], idx[partner], key[i], idx[i])
                                  : key_less(key[i], idx[i], key[partner], idx[partner]);
            if (swap) {
                double tk = key[i]; key[i] = key[partner]; key[partner] = tk;
                int ti = idx[i]; idx[i] = idx[partner]; idx[partner] = ti;
            }
        }
    }
}

// Block-wide bitonic sort of n2 (power of two) (key, index) pairs.
__device__ void bitonic_sort(double *key, int *idx, int n2)
{
    for (int k = 2; k <= n2; k <<= 1) {
        for (int j = k >> 1; j > 0; j >>= 1) {
            bitonic_step(key, idx, n2, k, j);
            __syncthreads();
        }
    }
}

// The two template dot products of one shift, in float64:
// ar = sum_j a_j rw_j, a2 = sum_j a_j^2 w_j over the template's length.
__device__ __forceinline__ void shift_dots(const double *aa, const double *rw, const double *w,
                                           int length, double &ar, double &a2)
{
    ar = 0.0;
    a2 = 0.0;
    for (int j = 0; j < length; ++j) {
        const double aj = __ldg(aa + j);
        ar = fma(aj, rw[j], ar);
        a2 = fma(aj * aj, w[j], a2);
    }
}

// Running best fit of one thread: the largest gain, earliest (width, shift) on ties.
struct Best {
    double gain;
    double depth;
    int wi;
    int shift;
};

__device__ __forceinline__ bool better(const Best &a, const Best &b)
{
    return a.gain > b.gain || (a.gain == b.gain && (a.wi < b.wi || (a.wi == b.wi && a.shift < b.shift)));
}

// Template widths, shapes and scan constants, as backends.plan.Templates has them.
struct TemplateSet {
    const int *widths;
    const int *strides;
    const long long *offsets;
    const double *a;          // 1 - signal, all templates concatenated
    const double *overshoot;
    double depth_min;
    double signal_depth;
};

#ifndef TILE_SHIFTS
#define TILE_SHIFTS 4
#endif

// a / b rounded to nearest like the '/' operator, given rb = 1 / b rounded to
// nearest: two Markstein corrections (the second makes the result exact, no
// overflow or underflow here). Unlike '/', no slow-path call, so the compiler
// can overlap several divisions and their loads.
__device__ __forceinline__ double div_rn(double a, double b, double rb)
{
    double q = a * rb;
    q = fma(fma(-q, b, a), rb, q);
    return fma(fma(-q, b, a), rb, q);
}

// Box depth filter and gain of shift i of width index wi, given its dot
// products; rsd = 1 / signal_depth (rounded to nearest).
__device__ __forceinline__ void offer(Best &best, double box, double ar, double a2, double ov,
                                      const TemplateSet &tp, int wi, int i, double rsd)
{
    const double depth = box * ov;
    const double k = div_rn(depth, tp.signal_depth, rsd);
    const double gain = 2.0 * k * ar - k * k * a2;
    if (gain > best.gain) {
        best.gain = gain; best.depth = 1.0 - depth; best.wi = wi; best.shift = i;
    }
}

// The same, forming the reciprocal itself (scan_thread, cupy_scan.cu).
__device__ __forceinline__ void offer(Best &best, double box, double ar, double a2, double ov,
                                      const TemplateSet &tp, int wi, int i)
{
    offer(best, box, ar, a2, ov, tp, wi, i, __drcp_rn(tp.signal_depth));
}

// This thread's share of one period's scan over widths [lo, hi).
// rw = (1 - flux) * w and w are the folded, patched arrays (length m);
// csum[k] = sum of the first k folded fluxes (length m + 1).
// Stride-1 widths: each thread takes TILE_SHIFTS consecutive shifts and slides
// a register window along the template (one load per array per template
// sample instead of one per shift). Other widths: one shift per thread.
// Either way a thread meets its shifts in TLS's order.
__device__ Best scan_thread(const double *rw, const double *w, const double *csum, int m,
                            int lo, int hi, const TemplateSet &tp)
{
    Best best = {0.0, 0.0, -1, 0x7fffffff};
    for (int wi = lo; wi < hi; ++wi) {
        const int d = tp.widths[wi];
        const int stride = tp.strides[wi];
        const int n_shifts = (m - d) / stride + 1;
        const double *aa = tp.a + tp.offsets[wi];
        const int length = (int)(tp.offsets[wi + 1] - tp.offsets[wi]);
        const double ov = tp.overshoot[wi];
        if (stride == 1) {
            for (int i0 = threadIdx.x * TILE_SHIFTS; i0 < n_shifts; i0 += BLOCK * TILE_SHIFTS) {
                double box[TILE_SHIFTS];
                bool any = false;
#pragma unroll
                for (int r = 0; r < TILE_SHIFTS; ++r) {
                    const int i = min(i0 + r, n_shifts - 1);
                    box[r] = 1.0 - (csum[i + d] - csum[i]) / d;
                    any |= i0 + r < n_shifts && box[r] > tp.depth_min;
                }
                if (!any) continue;
                double ar[TILE_SHIFTS], a2[TILE_SHIFTS], xr[TILE_SHIFTS], xw[TILE_SHIFTS];
#pragma unroll
                for (int r = 0; r < TILE_SHIFTS; ++r) {
                    const int k = min(i0 + r, m - 1);
                    ar[r] = 0.0; a2[r] = 0.0; xr[r] = rw[k]; xw[r] = w[k];
                }
                for (int j = 0; j < length; ++j) {
                    const double aj = __ldg(aa + j);
                    const double aj2 = aj * aj;
#pragma unroll
                    for (int r = 0; r < TILE_SHIFTS; ++r) {
                        ar[r] = fma(aj, xr[r], ar[r]);
                        a2[r] = fma(aj2, xw[r], a2[r]);
                    }
#pragma unroll
                    for (int r = 0; r < TILE_SHIFTS - 1; ++r) { xr[r] = xr[r + 1]; xw[r] = xw[r + 1]; }
                    const int next = min(i0 + TILE_SHIFTS + j, m - 1);
                    xr[TILE_SHIFTS - 1] = rw[next];
                    xw[TILE_SHIFTS - 1] = w[next];
                }
#pragma unroll
                for (int r = 0; r < TILE_SHIFTS; ++r)
                    if (i0 + r < n_shifts && box[r] > tp.depth_min)
                        offer(best, box[r], ar[r], a2[r], ov, tp, wi, i0 + r);
            }
        } else {
            for (int s = threadIdx.x; s < n_shifts; s += BLOCK) {
                const int i = s * stride;
                const double box = 1.0 - (csum[i + d] - csum[i]) / d;
                if (box > tp.depth_min) {
                    double ar, a2;
                    shift_dots(aa, rw + i, w + i, length, ar, a2);
                    offer(best, box, ar, a2, ov, tp, wi, i);
                }
            }
        }
    }
    return best;
}

// Block-wide argmax of the threads' Best (warp shuffles, then one entry per
// warp); thread 0 writes the period's result. `better` is a total order, so
// the result does not depend on the reduction tree.
__device__ void reduce_best(Best mine, double *gain_out, int *index_out, double *depth_out)
{
    __shared__ Best red[BLOCK / 32];
    for (int o = 16; o > 0; o >>= 1) {
        const Best other = {__shfl_down_sync(0xffffffffu, mine.gain, o),
                            __shfl_down_sync(0xffffffffu, mine.depth, o),
                            __shfl_down_sync(0xffffffffu, mine.wi, o),
                            __shfl_down_sync(0xffffffffu, mine.shift, o)};
        if (better(other, mine)) mine = other;
    }
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 1; i < BLOCK / 32; ++i)
            if (better(red[i], mine)) mine = red[i];
        *gain_out = mine.gain;
        *index_out = mine.wi;
        *depth_out = mine.depth;
    }
}

// Scan of folded arrays in global memory, one block per period of the batch:
// folded arrays of period b start at b * m (rw, w) and b * (m + 1) (csum).
__device__ void scan_global(const double *rw, const double *w, const double *csum, int m,
                            const int *lo, const int *hi, TemplateSet tp,
                            double *gain, int *index, double *depth)
{
    const int b = blockIdx.x;
    const size_t off = (size_t)b * m;
    Best mine = scan_thread(rw + off, w + off, csum + off + b, m, lo[b], hi[b], tp);
    reduce_best(mine, gain + b, index + b, depth + b);
}
