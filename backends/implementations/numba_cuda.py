"""``numba``: the exact TLS statistic as numba.cuda kernels.

Per batch of periods: fold kernels (phase in float64 at epoch 0, rounded as
TLS's fastmath fold), a stable parallel merge sort by phase (log2 N passes,
each element finds its place by binary search in the partner run; no sort
library exists for numba.cuda), a gather that builds the wrap-around-patched
r = 1 - flux and weights, then the chi2 scan over ``backends.scan_jobs`` (one
block per job, box depth and the two template dot products per shift) and a
per-period reduction.

Runs on a GPU, and without one under ``NUMBA_ENABLE_CUDASIM=1`` (numba's CUDA
simulator, how CI tests it). ``numba.cuda`` is imported only when the backend
is used: importing this module touches no GPU.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys

import numba
import numpy as np

from backends.gpu import checked_block_size, missing_requirements
from backends.protocol import PeriodStats, TLSBackend
from backends.scan_jobs import scan_jobs

BATCH_BYTES = 256 << 20  # device memory a batch of folded periods may take
MAX_BATCH_PERIODS = 4096
SHIFTS_PER_THREAD = 4  # a scan job is this many block-widths of phase shifts
BLOCK_SIZES = (32, 64, 128, 256, 512)  # powers of two: the block reduction halves
cuda = None  # numba.cuda, bound by _kernels() on first use


def simulator() -> bool:
    """Whether numba.cuda runs (or will run) in its CPU simulator."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def default_block_size() -> int:
    """Threads per block; the simulator runs a Python thread per CUDA thread,
    so it gets small blocks."""
    return 32 if simulator() else 128


@functools.lru_cache(maxsize=None)
def _kernels(threads):
    """Kernels for blocks of ``threads``, compiled on first launch; numba.cuda
    is imported here, not at module import. Block size and chunk are
    compile-time constants."""
    # a module global, not a closure: the simulator swaps the kernels' global ``cuda``
    global cuda
    import math
    from types import SimpleNamespace

    if "numba.cuda" not in sys.modules:
        # NUMBA_ENABLE_CUDASIM as it is now, not as it was when numba was imported
        numba.core.config.reload_config()
    from numba import cuda, float64, int32

    chunk = SHIFTS_PER_THREAD * threads

    @cuda.jit
    def scale(t, inverse_periods, keys, vals):
        """x = t * (1 / P), TLS's fastmath fold; the fraction is taken in a
        second kernel so that NVVM cannot contract x - floor(x) into an FMA."""
        k, p = cuda.grid(2)
        if p < keys.shape[0] and k < keys.shape[1]:
            keys[p, k] = t[k] * inverse_periods[p]
            vals[p, k] = k

    @cuda.jit
    def fraction(keys):
        k, p = cuda.grid(2)
        if p < keys.shape[0] and k < keys.shape[1]:
            keys[p, k] = keys[p, k] - math.floor(keys[p, k])

    @cuda.jit
    def merge_pass(kin, vin, kout, vout, run):
        """Merge sorted runs of length ``run`` pairwise, stably."""
        k, p = cuda.grid(2)
        n = kin.shape[1]
        if p >= kin.shape[0] or k >= n:
            return
        x = kin[p, k]
        base = (k // (2 * run)) * (2 * run)
        mid = min(base + run, n)
        end = min(base + 2 * run, n)
        if k < mid:  # left run: after the right run's keys < x
            lo, hi, own = mid, end, k - base
        else:  # right run: after the left run's keys <= x
            lo, hi, own = base, mid, k - mid
        first = lo
        while lo < hi:
            c = (lo + hi) // 2
            if kin[p, c] < x or (k >= mid and kin[p, c] == x):
                lo = c + 1
            else:
                hi = c
        kout[p, base + own + lo - first] = x
        vout[p, base + own + lo - first] = vin[p, k]

    @cuda.jit
    def gather(y, w, order, r_out, w_out):
        """Patched r = 1 - flux and weights in phase order."""
        k, p = cuda.grid(2)
        if p < r_out.shape[0] and k < r_out.shape[1]:
            src = order[p, k % order.shape[1]]
            r_out[p, k] = 1.0 - y[src]
            w_out[p, k] = w[src]

    @cuda.jit
    def scan(r, w, job_period, job_width, job_first, widths, strides, offsets, a,
             overshoot, depth_min, signal_depth, out_gain, out_depth):
        """Best (gain, depth) of one job; ties go to the smaller shift."""
        job = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        p = job_period[job]
        wi = job_width[job]
        d = widths[wi]
        stride = strides[wi]
        o = offsets[wi]
        length = offsets[wi + 1] - o
        end = min(job_first[job] + chunk, (r.shape[1] - d) // stride + 1)
        best_gain, best_shift, best_depth = 0.0, end, 0.0
        s = job_first[job] + tid
        while s < end:
            i = s * stride
            box = 0.0
            for j in range(d):
                box += r[p, i + j]
            box /= d
            if box > depth_min:
                depth = box * overshoot[wi]
                kk = depth / signal_depth
                ar = 0.0
                a2 = 0.0
                for j in range(length):
                    aj = a[o + j]
                    wj = w[p, i + j]
                    ar += aj * (r[p, i + j] * wj)
                    a2 += aj * aj * wj
                gain = 2.0 * kk * ar - kk * kk * a2
                if gain > best_gain:
                    best_gain, best_shift, best_depth = gain, s, 1.0 - depth
            s += threads
        sg = cuda.shared.array(threads, float64)
        ss = cuda.shared.array(threads, int32)
        sd = cuda.shared.array(threads, float64)
        sg[tid] = best_gain
        ss[tid] = best_shift
        sd[tid] = best_depth
        cuda.syncthreads()
        half = threads // 2
        while half > 0:
            if tid < half:
                g = sg[tid + half]
                if g > sg[tid] or (g == sg[tid] and ss[tid + half] < ss[tid]):
                    sg[tid] = g
                    ss[tid] = ss[tid + half]
                    sd[tid] = sd[tid + half]
            cuda.syncthreads()
            half //= 2
        if tid == 0:
            out_gain[job] = sg[0]
            out_depth[job] = sd[0]

    @cuda.jit
    def reduce_jobs(job_gain, job_depth, job_width, period_start, gain, index, depth):
        """Per period, the first job with the largest positive gain."""
        p = cuda.grid(1)
        if p < gain.size:
            best_gain, best_index, best_depth = 0.0, -1, 0.0
            for j in range(period_start[p], period_start[p + 1]):
                if job_gain[j] > best_gain:
                    best_gain, best_index, best_depth = job_gain[j], job_width[j], job_depth[j]
            gain[p] = best_gain
            index[p] = best_index
            depth[p] = best_depth

    return SimpleNamespace(cuda=cuda, threads=threads, chunk=chunk, scale=scale, fraction=fraction,
                           merge_pass=merge_pass, gather=gather, scan=scan,
                           reduce_jobs=reduce_jobs)


def bytes_per_period(plan) -> int:
    """Device bytes one period of a batch takes: the sort's ping-pong keys and
    indices, then the patched r and w."""
    n = plan.lc.size
    return 2 * (8 + 4) * n + 2 * 8 * (n + plan.templates.maxwidth)


def _grid2(columns, rows, threads):
    return (-(-columns // threads), rows), (threads, 1)


class NumbaCUDABackend(TLSBackend):
    """Exact TLS statistic in numba.cuda kernels (also under the CUDA simulator)."""

    name = "numba"
    summary = "exact: numba.cuda kernels, device merge sort, block-per-job chi2 scan"
    device = "gpu"

    def __init__(self, block_size=None):
        super().__init__()
        self.block = checked_block_size(block_size, BLOCK_SIZES) or default_block_size()

    @classmethod
    def missing(cls):
        if simulator() and importlib.util.find_spec("numba_cuda") is not None:
            return None  # the simulator runs the kernels on the CPU: no GPU needed
        return missing_requirements(("numba_cuda",))

    def upload(self, plan):
        k = _kernels(self.block)
        tp = plan.templates
        arrays = dict(
            t=plan.lc.t, y=plan.lc.y, w=plan.lc.w, widths=tp.widths, strides=tp.strides,
            offsets=tp.offsets, a=tp.a, overshoot=tp.overshoot,
        )
        return plan, {name: k.cuda.to_device(np.ascontiguousarray(v)) for name, v in arrays.items()}

    def fold_sort(self, state, periods):
        """Device (r, w) of shape (periods, N + maxwidth), phase-sorted and patched."""
        k = _kernels(self.block)
        plan, dev = state
        n, b = plan.lc.size, len(periods)
        keys = [k.cuda.device_array((b, n), np.float64) for _ in range(2)]
        order = [k.cuda.device_array((b, n), np.int32) for _ in range(2)]
        grid, block = _grid2(n, b, k.threads)
        inverse = k.cuda.to_device(1.0 / np.asarray(periods, np.float64))
        k.scale[grid, block](dev["t"], inverse, keys[0], order[0])
        k.fraction[grid, block](keys[0])
        run = 1
        while run < n:
            k.merge_pass[grid, block](keys[0], order[0], keys[1], order[1], run)
            keys.reverse()
            order.reverse()
            run *= 2
        m = n + plan.templates.maxwidth
        r = k.cuda.device_array((b, m), np.float64)
        w = k.cuda.device_array((b, m), np.float64)
        grid, block = _grid2(m, b, k.threads)
        k.gather[grid, block](dev["y"], dev["w"], order[0], r, w)
        return r, w

    def chi2_scan(self, state, folded, periods, lo, hi):
        k = _kernels(self.block)
        plan, dev = state
        tp = plan.templates
        r, w = folded
        jobs = scan_jobs(lo, hi, tp.widths, tp.strides, r.shape[1], k.chunk)
        b = len(periods)
        job_gain = k.cuda.device_array(max(jobs.size, 1), np.float64)
        job_depth = k.cuda.device_array(max(jobs.size, 1), np.float64)
        job_width = k.cuda.to_device(jobs.width)
        if jobs.size:
            k.scan[jobs.size, k.threads](
                r, w, k.cuda.to_device(jobs.period), job_width, k.cuda.to_device(jobs.first),
                dev["widths"], dev["strides"], dev["offsets"], dev["a"], dev["overshoot"],
                tp.depth_min, tp.signal_depth, job_gain, job_depth,
            )
        gain = k.cuda.device_array(b, np.float64)
        index = k.cuda.device_array(b, np.int32)
        depth = k.cuda.device_array(b, np.float64)
        k.reduce_jobs[-(-b // k.threads), k.threads](
            job_gain, job_depth, job_width, k.cuda.to_device(jobs.period_start), gain, index, depth
        )
        return PeriodStats.from_gains(plan, gain.copy_to_host(), index.copy_to_host(), depth.copy_to_host())

    def synchronize(self):
        _kernels(self.block).cuda.synchronize()

    def max_batch_periods(self, plan):
        return int(np.clip(BATCH_BYTES // bytes_per_period(plan), 1, MAX_BATCH_PERIODS))

    def device_name(self):
        if simulator():
            return "numba CUDA simulator (CPU)"
        name = _kernels(self.block).cuda.get_current_device().name
        return f"GPU: {name.decode() if isinstance(name, bytes) else name}"
