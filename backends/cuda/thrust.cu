// thrust: CCCL device-side primitives, global memory, built for large n and
// many periods. thrust_tile_sort: cub::BlockMergeSort of (phase, index) tiles
// of TILE = BLOCK * ITEMS samples; thrust_merge_pass: stable pairwise merges
// of sorted runs (each element finds its rank in the other run by binary
// search); thrust_gather: patched arrays and cub::BlockScan cumulative flux;
// thrust_scan: the chi2 scan with float32 dot products on polyphase copies in
// shared memory (phase_scan.cuh); scan_folded (scan_kernel.cuh, float64, no
// shared memory) for light curves whose copies do not fit.
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_scan.cuh>
#ifndef TILE_ROUND
#define TILE_ROUND 0  // phase_scan.cuh: no rounds, see there
#endif
#include "phase_scan.cuh"
#include "scan_kernel.cuh"

#ifndef ITEMS
#define ITEMS 8
#endif
#define TILE (BLOCK * ITEMS)

struct PhaseLess {
    __device__ bool operator()(const double &a, const double &b) const { return a < b; }
};

// Sorted runs of TILE samples per period; the padded length is a multiple of TILE.
extern "C" __global__ void __launch_bounds__(BLOCK)
thrust_tile_sort(const double *t, int n, int padded, const double *periods,
                 double *keys, int *order)
{
    typedef cub::BlockMergeSort<double, BLOCK, ITEMS, int> Sort;
    __shared__ typename Sort::TempStorage temp;
    const int b = blockIdx.y;
    const int base = blockIdx.x * TILE + threadIdx.x * ITEMS;  // blocked arrangement
    const double period = periods[b];
    double key[ITEMS];
    int idx[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        idx[i] = base + i;
        key[i] = base + i < n ? fold_phase(t[base + i], period) : PAD_KEY;
    }
    Sort(temp).StableSort(key, idx, PhaseLess());
    const size_t out = (size_t)b * padded + base;
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
        keys[out + i] = key[i];
        order[out + i] = idx[i];
    }
}

// Number of entries of run [begin, end) that precede (k, i) in (key, index) order.
__device__ __forceinline__ int rank_in(const double *key, const int *idx, int begin, int end,
                                       double k, int i)
{
    int lo = begin, hi = end;
    while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (key_less(key[mid], idx[mid], k, i)) lo = mid + 1; else hi = mid;
    }
    return lo - begin;
}

// Merge adjacent sorted runs of `width` entries into runs of 2 * width.
extern "C" __global__ void __launch_bounds__(BLOCK)
thrust_merge_pass(int padded, int width, const double *keys_in, const int *order_in,
                  double *keys_out, int *order_out)
{
    const int e = blockIdx.x * BLOCK + threadIdx.x;
    if (e >= padded) return;
    const size_t base = (size_t)blockIdx.y * padded;
    const double *key = keys_in + base;
    const int *idx = order_in + base;
    const int start = e / (2 * width) * (2 * width);
    const int mid = min(start + width, padded);
    const int end = min(start + 2 * width, padded);
    const double k = key[e];
    const int i = idx[e];
    const int pos = e < mid ? (e - start) + rank_in(key, idx, mid, end, k, i)
                            : (e - mid) + rank_in(key, idx, start, mid, k, i);
    keys_out[base + start + pos] = k;
    order_out[base + start + pos] = i;
}

// Patched (rw, w) and the cumulative flux of each period, one block per period.
extern "C" __global__ void __launch_bounds__(BLOCK)
thrust_gather(const double *y, const double *w, int n, int m, int padded, const int *order,
              double *rw_out, double *w_out, double *csum_out)
{
    typedef cub::BlockScan<double, BLOCK, cub::BLOCK_SCAN_WARP_SCANS> Scan;
    __shared__ typename Scan::TempStorage temp;
    const int b = blockIdx.x;
    const int *idx = order + (size_t)b * padded;
    double *rw_b = rw_out + (size_t)b * m;
    double *w_b = w_out + (size_t)b * m;
    double *csum = csum_out + (size_t)b * (m + 1);
    if (threadIdx.x == 0) csum[0] = 0.0;
    double carry = 0.0;
    for (int start = 0; start < m; start += TILE) {
        double f[ITEMS];
        const int base = start + threadIdx.x * ITEMS;
#pragma unroll
        for (int i = 0; i < ITEMS; ++i) {
            const int k = base + i;
            f[i] = 0.0;
            if (k < m) {
                const int src = idx[k % n];
                f[i] = y[src];
                rw_b[k] = (1.0 - y[src]) * w[src];
                w_b[k] = w[src];
            }
        }
        double total;
        Scan(temp).InclusiveSum(f, f, total);
#pragma unroll
        for (int i = 0; i < ITEMS; ++i)
            if (base + i < m) csum[base + i + 1] = carry + f[i];
        carry += total;
        __syncthreads();  // temp is reused by the next tile
    }
}

// One block per period: float32 polyphase copies of rw, w in dynamic shared
// memory (floats[cap] each), cumulative flux read from global memory.
// (BLOCK, 1) as simple_search: the register allocation that was timed (108).
extern "C" __global__ void __launch_bounds__(BLOCK, 1)
thrust_scan(const double *rw, const double *w, const double *csum, int m, int cap,
            const int *lo, const int *hi,
            const int *widths, const int *strides, const double *overshoot,
            const float4 *ta, const int *toff, const int *taps,
            double depth_min, double signal_depth,
            double *gain, int *index, double *depth)
{
    extern __shared__ float fsm[];
    const int b = blockIdx.x;
    const double *rw_b = rw + (size_t)b * m;
    const double *w_b = w + (size_t)b * m;
    const double *cs_b = csum + (size_t)b * (m + 1);
    const TemplateSet tp = {widths, strides, nullptr, nullptr, overshoot, depth_min, signal_depth};
    const PhaseTemplates pt = {ta, toff, taps};
    auto src = [&](int p, float &r, float &v) { r = (float)rw_b[p]; v = (float)w_b[p]; };
    auto cs = [&](int p) { return __ldg(cs_b + p); };
    Best mine = scan_phased(fsm, fsm + cap, cs, src, m, lo[b], hi[b], tp, pt);
    reduce_best(mine, gain + b, index + b, depth + b);
}
