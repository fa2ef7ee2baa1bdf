// simple: one fused kernel per period with everything in shared memory:
// fold in float64, bitonic sort of (phase, index) padded to a power of two
// (correct for every n), gather the patched arrays, chunked block scan for the
// cumulative flux, exact chi2 scan. The host checks that the light curve fits
// the device's opt-in shared memory before it ever launches this kernel.
//
// Dynamic shared memory: doubles[max(n2, 3m + 1)] then ints[n2]; the sort keys
// are overwritten by rw | w | csum once the order is known.
#include "tls_common.cuh"

// csum[k] = y[order[0]] + ... + y[order[k-1]] over the patched order, k <= m.
__device__ void block_cumsum(const double *y, const int *idx, int n, int m, double *csum)
{
    __shared__ double part[BLOCK];
    const int chunk = (m + BLOCK - 1) / BLOCK;
    const int begin = min(m, (int)threadIdx.x * chunk);
    const int end = min(m, begin + chunk);
    double run = 0.0;
    for (int k = begin; k < end; ++k) run += y[idx[k % n]];
    part[threadIdx.x] = run;
    __syncthreads();
    if (threadIdx.x == 0) {
        double total = 0.0;
        for (int i = 0; i < BLOCK; ++i) {
            double v = part[i];
            part[i] = total;
            total += v;
        }
        csum[0] = 0.0;
    }
    __syncthreads();
    run = part[threadIdx.x];
    for (int k = begin; k < end; ++k) {
        run += y[idx[k % n]];
        csum[k + 1] = run;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
simple_search(const double *t, const double *y, const double *w, int n, int n2, int m,
              const double *periods, const int *lo, const int *hi,
              const int *widths, const int *strides, const long long *offsets,
              const double *a, const double *overshoot, double depth_min, double signal_depth,
              double *gain, int *index, double *depth)
{
    extern __shared__ double smem[];
    const int region = max(n2, 3 * m + 1);
    double *key = smem;
    int *idx = (int *)(smem + region);
    const int b = blockIdx.x;
    const double period = periods[b];

    for (int i = threadIdx.x; i < n2; i += BLOCK) {
        key[i] = i < n ? fold_phase(t[i], period) : PAD_KEY;
        idx[i] = i;
    }
    __syncthreads();
    bitonic_sort(key, idx, n2);

    double *rw_s = smem;
    double *w_s = smem + m;
    double *csum = smem + 2 * m;
    for (int k = threadIdx.x; k < m; k += BLOCK) {
        const int src = idx[k % n];
        rw_s[k] = (1.0 - y[src]) * w[src];
        w_s[k] = w[src];
    }
    block_cumsum(y, idx, n, m, csum);
    __syncthreads();

    TemplateSet tp = {widths, strides, offsets, a, overshoot, depth_min, signal_depth};
    Best mine = scan_thread(rw_s, w_s, csum, m, lo[b], hi[b], tp);
    reduce_best(mine, gain + b, index + b, depth + b);
}
