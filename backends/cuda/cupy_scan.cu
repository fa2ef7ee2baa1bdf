// cupy: the exact chi2 scan as a list of jobs (backends/scan_jobs.py), for
// folded arrays CuPy built with array operations (batched argsort, cumsum).
// scan_jobs: one block scores up to CHUNK phase shifts of one template width
// of one period, so the grid stays large for any light-curve length;
// reduce_jobs: per period, the first job with the largest positive gain.
// Best, offer and reduce_best (TLS's tie rule) come from tls_common.cuh,
// shared with the PyCUDA kernels.
#include "tls_common.cuh"
#include "job_reduce.cuh"

#ifndef CHUNK
#define CHUNK (4 * BLOCK)
#endif

// rw = (1 - flux) * w and w: (periods, m); csum: (periods, m + 1) cumulative flux.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan_jobs(const double *rw, const double *w, const double *csum, int m,
          const int *job_period, const int *job_width, const int *job_first,
          const int *widths, const int *strides, const long long *offsets,
          const double *a, const double *overshoot, double depth_min, double signal_depth,
          double *job_gain, int *job_index, double *job_depth)
{
    const int job = blockIdx.x;
    const int wi = job_width[job];
    const size_t p = job_period[job];
    rw += p * m;
    w += p * m;
    csum += p * (m + 1);
    const TemplateSet tp = {widths, strides, offsets, a, overshoot, depth_min, signal_depth};
    const int d = widths[wi];
    const int stride = strides[wi];
    const int end = min(job_first[job] + CHUNK, (m - d) / stride + 1);
    const double *aa = a + offsets[wi];
    const int length = (int)(offsets[wi + 1] - offsets[wi]);
    const double ov = overshoot[wi];
    Best best = {0.0, 0.0, -1, 0x7fffffff};
    for (int s = job_first[job] + threadIdx.x; s < end; s += BLOCK) {
        const int i = s * stride;
        const double box = 1.0 - (csum[i + d] - csum[i]) / d;
        if (box > depth_min) {
            double ar, a2;
            shift_dots(aa, rw + i, w + i, length, ar, a2);
            offer(best, box, ar, a2, ov, tp, wi, i);
        }
    }
    reduce_best(best, job_gain + job, job_index + job, job_depth + job);
}
