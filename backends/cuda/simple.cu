// simple: one fused kernel per period with everything in shared memory:
// fold in float64, bitonic sort of (phase, index) over the n samples only
// (virtual +inf padding), cumulative flux by a block scan, then the chi2 scan
// with float32 dot products on polyphase copies (phase_scan.cuh). The host
// checks that the light curve fits the device's opt-in shared memory before
// it ever launches this kernel.
//
// Dynamic shared memory (simple_shared_bytes on the host):
//   csum: doubles[skewed(m) + 1] | xr, xw: floats[cap] each | order: ints[n];
// the sort keys (doubles[n]) live in xr | xw until the order is known.
#include "phase_scan.cuh"

// csum[skewed(k)] = y[order[0]] + ... + y[order[k-1]] over the patched order, k <= m.
__device__ void block_cumsum(const double *y, const int *idx, int n, int m, double *csum)
{
    __shared__ double warp_total[BLOCK / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int chunk = (m + BLOCK - 1) / BLOCK;
    const int begin = min(m, (int)threadIdx.x * chunk);
    const int end = min(m, begin + chunk);
    double run = 0.0;
    for (int k = begin; k < end; ++k) run += y[idx[k % n]];
    double inclusive = run;
    for (int o = 1; o < 32; o <<= 1) {
        const double v = __shfl_up_sync(0xffffffffu, inclusive, o);
        if (lane >= o) inclusive += v;
    }
    double before = __shfl_up_sync(0xffffffffu, inclusive, 1);
    if (lane == 0) before = 0.0;
    if (lane == 31) warp_total[warp] = inclusive;
    __syncthreads();
    run = 0.0;
    for (int i = 0; i < warp; ++i) run += warp_total[i];
    run += before;
    if (threadIdx.x == 0) csum[0] = 0.0;
    for (int k = begin; k < end; ++k) {
        run += y[idx[k % n]];
        csum[skewed(k + 1)] = run;
    }
}

// (BLOCK, 1): without the minimum, ptxas caps this kernel at 80 registers and
// spills (seen with BLOCK = 256, CUDA 13.0); 108 registers keep 2 blocks per SM.
extern "C" __global__ void __launch_bounds__(BLOCK, 1)
simple_search(const double *t, const double *y, const double *w, const double *periods,
              int n, int m, int cap, const int *lo, const int *hi,
              const int *widths, const int *strides, const double *overshoot,
              const float4 *ta, const int *toff, const int *taps,
              double depth_min, double signal_depth,
              double *gain, int *index, double *depth)
{
    extern __shared__ double smem[];
    double *csum = smem;
    float *xr = (float *)(smem + skewed(m) + 1);
    float *xw = xr + cap;
    int *idx = (int *)(xw + cap);
    double *key = (double *)xr;
    const int b = blockIdx.x;
    const double period = periods[b];

    for (int i = threadIdx.x; i < n; i += BLOCK) {
        key[i] = fold_phase(t[i], period);
        idx[i] = i;
    }
    __syncthreads();
    bitonic_sort_n(key, idx, n);
    block_cumsum(y, idx, n, m, csum);

    const TemplateSet tp = {widths, strides, nullptr, nullptr, overshoot, depth_min, signal_depth};
    const PhaseTemplates pt = {ta, toff, taps};
    auto src = [&](int p, float &r, float &v) {
        const int s = idx[p % n];
        const double ws = w[s];
        r = (float)((1.0 - y[s]) * ws);
        v = (float)ws;
    };
    auto cs = [&](int p) { return csum[skewed(p)]; };
    Best mine = scan_phased(xr, xw, cs, src, m, lo[b], hi[b], tp, pt);
    reduce_best(mine, gain + b, index + b, depth + b);
}
