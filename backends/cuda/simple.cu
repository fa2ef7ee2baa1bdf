// simple: one fused kernel per (light curve, period) with everything in shared
// memory: fold in float64, bucket sort of (phase, index) (bucket_sort.cuh),
// cumulative flux by a block scan, then the chi2
// scan with float32 dot products on polyphase copies (phase_scan.cuh). The host
// checks that every light curve fits the device's opt-in shared memory before
// it ever launches this kernel.
//
// One launch searches a pack of light curves (backends/packing.py): block b
// searches blocks[b].period of light curve blocks[b].curve, whose samples and
// templates sit at that curve's offsets in the concatenated arrays. A single
// light curve is a pack of one.
//
// Dynamic shared memory per block (simple_shared_bytes on the host, the
// launch takes the pack's maximum):
//   csum: doubles[skewed(m) + 1] | xr, xw: floats[cap] each | order: ints[n];
// the sort keys (doubles[n]) live in xr | xw until the order is known.
#include "bucket_sort.cuh"

// csum[skewed(k)] = y[order[0]] + ... + y[order[k-1]] over the patched order, k <= m.
__device__ void block_cumsum(const double *y, const int *idx, int n, int m, double *csum)
{
    typedef cub::BlockScan<double, BLOCK, cub::BLOCK_SCAN_WARP_SCANS> Scan;  // warps' scans, then their totals in turn
    __shared__ typename Scan::TempStorage scan;
    const int chunk = (m + BLOCK - 1) / BLOCK;
    const int begin = min(m, (int)threadIdx.x * chunk);
    const int end = min(m, begin + chunk);
    double run = 0.0;
    for (int k = begin; k < end; ++k) run += y[idx[k % n]];
    Scan(scan).ExclusiveSum(run, run);
    if (threadIdx.x == 0) csum[0] = 0.0;
    for (int k = begin; k < end; ++k) {
        run += y[idx[k % n]];
        csum[skewed(k + 1)] = run;
    }
}

// One light curve of a pack, laid out as packing.CURVE.
struct PackedCurve {
    double depth_min, signal_depth;
    int start;  // first sample in t, y, w
    int n, m, cap;
    int wbase;  // first entry in widths, strides, overshoot, toff, taps
};

// One block of a launch, laid out as packing.BLOCK: lo, hi index the curve's widths.
struct PackedBlock {
    double period;
    int curve, lo, hi;
};

static_assert(sizeof(PackedCurve) == 40 && sizeof(PackedBlock) == 24, "layout of packing.CURVE, packing.BLOCK");

// (BLOCK, 1): without the minimum, ptxas caps this kernel at 80 registers and
// spills (seen with BLOCK = 256, CUDA 13.0); 108 registers keep 2 blocks per SM.
extern "C" __global__ void __launch_bounds__(BLOCK, 1)
simple_search(const PackedCurve *curves, const PackedBlock *blocks,
              const double *t_all, const double *y_all, const double *w_all,
              const int *widths, const int *strides, const double *overshoot,
              const float4 *ta, const int *toff, const int *taps,
              double *gain, int *index, double *depth)
{
    const int b = blockIdx.x;
    const PackedBlock job = blocks[b];
    const PackedCurve c = curves[job.curve];
    const double *t = t_all + c.start, *y = y_all + c.start, *w = w_all + c.start;
    const int n = c.n, m = c.m;

    extern __shared__ double smem[];
    double *csum = smem;
    float *xr = (float *)(smem + skewed(m) + 1);
    float *xw = xr + c.cap;
    int *idx = (int *)(xw + c.cap);
    double *key = (double *)xr;

    for (int i = threadIdx.x; i < n; i += BLOCK) {
        key[i] = fold_phase(t[i], job.period);
        idx[i] = i;
    }
    __syncthreads();
    bucket_sort_n(key, idx, n, (int *)csum, n);  // csum is free until block_cumsum
    block_cumsum(y, idx, n, m, csum);

    const int wb = c.wbase;
    const TemplateSet tp = {widths + wb, strides + wb, nullptr, nullptr, overshoot + wb,
                            c.depth_min, c.signal_depth};
    const PhaseTemplates pt = {ta, toff + wb, taps + wb};
    auto src = [&](int p, float &r, float &v) {
        const int s = idx[p % n];
        const double ws = w[s];
        r = (float)((1.0 - y[s]) * ws);
        v = (float)ws;
    };
    auto cs = [&](int p) { return csum[skewed(p)]; };
    Best mine = scan_phased(xr, xw, cs, src, m, job.lo, job.hi, tp, pt);
    reduce_best(mine, gain + b, index + b, depth + b);
}
