"""What both studies of this report take per width of a fold: its template
and the shifts ``cpu`` scans (the template within the fold's m samples)."""
import numpy as np

from backends.implementations.cpu import shift_end


def template_and_shifts(tp, wi, m, n):
    """(template a, width d, shifts) of width index wi on a fold of m samples (n real)."""
    a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
    d, stride = tp.widths[wi], tp.strides[wi]
    idx = np.arange(0, shift_end(m, n, d, stride), stride)
    return a, d, idx[idx + a.size <= m]
