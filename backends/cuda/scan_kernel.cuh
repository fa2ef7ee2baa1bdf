// scan_folded: the exact chi2 scan of a batch of periods whose folded arrays
// sit in global memory (see scan_global), shared by basic and thrust.
#pragma once
#include "tls_common.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK)
scan_folded(const double *rw, const double *w, const double *csum, int m,
            const int *lo, const int *hi,
            const int *widths, const int *strides, const long long *offsets,
            const double *a, const double *overshoot, double depth_min, double signal_depth,
            double *gain, int *index, double *depth)
{
    TemplateSet tp = {widths, strides, offsets, a, overshoot, depth_min, signal_depth};
    scan_global(rw, w, csum, m, lo, hi, tp, gain, index, depth);
}
