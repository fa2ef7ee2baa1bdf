// reduce_jobs: per period, the first job with the largest positive gain, for
// scans that cut a period into jobs (backends/scan_jobs.py): cupy and pruned.
#pragma once

// Jobs of period p are period_start[p] .. period_start[p + 1] - 1, in
// (width, shift) order, so a strict > keeps the CPU's first best fit.
extern "C" __global__ void
reduce_jobs(const double *job_gain, const int *job_index, const double *job_depth,
            const int *period_start, int n_periods, double *gain, int *index, double *depth)
{
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_periods) return;
    double best_gain = 0.0, best_depth = 0.0;
    int best_index = -1;
    for (int j = period_start[p]; j < period_start[p + 1]; ++j) {
        if (job_gain[j] > best_gain) {
            best_gain = job_gain[j];
            best_index = job_index[j];
            best_depth = job_depth[j];
        }
    }
    gain[p] = best_gain;
    index[p] = best_index;
    depth[p] = best_depth;
}
