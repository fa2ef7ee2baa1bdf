// basic: the plainest correct kernels, global memory only, one block per period.
// basic_fold_sort: fold in float64, bitonic sort of (phase, index) padded to a
// power of two, gather the wrap-around-patched arrays, serial cumulative sum
// (the CPU reference's own summation order). scan_folded (scan_kernel.cuh): the exact chi2 scan.
#include "tls_common.cuh"
#include "scan_kernel.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
basic_fold_sort(const double *t, const double *y, const double *w, int n, int n2, int m,
                const double *periods, double *keys, int *order,
                double *rw_out, double *w_out, double *csum_out)
{
    const int b = blockIdx.x;
    double *key = keys + (size_t)b * n2;
    int *idx = order + (size_t)b * n2;
    const double period = periods[b];
    for (int i = threadIdx.x; i < n2; i += BLOCK) {
        key[i] = i < n ? fold_phase(t[i], period) : PAD_KEY;
        idx[i] = i;
    }
    __syncthreads();
    bitonic_sort(key, idx, n2);

    double *rw_b = rw_out + (size_t)b * m;
    double *w_b = w_out + (size_t)b * m;
    for (int k = threadIdx.x; k < m; k += BLOCK) {
        const int src = idx[k % n];
        rw_b[k] = (1.0 - y[src]) * w[src];
        w_b[k] = w[src];
    }
    if (threadIdx.x == 0) {
        double *csum = csum_out + (size_t)b * (m + 1);
        double run = 0.0;
        csum[0] = 0.0;
        for (int k = 0; k < m; ++k) {
            run += y[idx[k % n]];
            csum[k + 1] = run;
        }
    }
}
