"""``cupy``: the exact TLS statistic with CuPy, as CuPy users write it.

Per batch of periods, array operations on device: the float64 fold of every
(period, sample) at epoch 0, rounded as TLS's fastmath fold, a batched stable ``argsort`` by phase, one fancy
index for the wrap-around-patched order, and ``cumsum`` for the running box
means. The chi2 scan is a RawModule (``backends/cuda/cupy_scan.cu``, built on
the PyCUDA kernels' ``tls_common.cuh``): one block per job of
``backends.scan_jobs``, then a per-period reduction. Batches are sized so that
a batch's arrays, sort scratch included, stay under a fixed byte budget and
half the free device memory: a 3000-day 2-minute light curve runs a few
periods at a time instead of running out of memory.

CuPy is imported only when the backend is used: importing this module touches
no GPU.
"""

from __future__ import annotations

import numpy as np

from backends.gpu import checked_block_size, missing_requirements
from backends.kernel_cache import CUDA_DIR, KernelCache, sources_digest
from backends.protocol import PeriodStats, TLSBackend
from backends.scan_jobs import scan_jobs

BATCH_BYTES = 1 << 30  # device memory a batch of periods may take at its peak
MAX_BATCH_PERIODS = 4096
# peak bytes per (period, sample of the patched fold): phase, argsort output
# and thrust's segmented stable-sort scratch, then patched order, flux, rw, w, csum
BYTES_PER_SAMPLE = 128
BLOCK_SIZES = (32, 64, 128, 256, 512)  # powers of two: the block reduction halves
DEFAULT_BLOCK = 128
SHIFTS_PER_THREAD = 4  # a scan job is this many block-widths of phase shifts
SOURCE = "cupy_scan.cu"

_modules = KernelCache(maxsize=8)


def _module(cp, block, chunk):
    """The scan module for the current device, compiled (NVRTC) once per
    device, block size and state of the sources. CuPy's on-disk cache keys on
    the code and the options but not on the ``-I`` headers it includes: the
    hash of every source in ``backends/cuda`` goes in as an option, so an
    edited header is never served a stale binary."""
    device = cp.cuda.Device().id
    sources = sources_digest()

    def build():
        return cp.RawModule(
            code=(CUDA_DIR / SOURCE).read_text(),
            options=("-std=c++17", f"-I{CUDA_DIR}", f"-DBLOCK={block}", f"-DCHUNK={chunk}",
                     f"-DTLS_SOURCES={sources}"),
        )

    return _modules.get((SOURCE, block, chunk, device, sources), build)


def bytes_per_period(plan) -> int:
    return BYTES_PER_SAMPLE * (plan.lc.size + plan.templates.maxwidth)


class CuPyBackend(TLSBackend):
    """Exact TLS statistic: CuPy array ops for fold/sort/cumsum, RawModule scan."""

    name = "cupy"
    summary = "exact: CuPy batched argsort + cumsum, RawModule block-per-job chi2 scan"
    device = "gpu"

    def __init__(self, block_size=None):
        super().__init__()
        self.block = checked_block_size(block_size, BLOCK_SIZES, DEFAULT_BLOCK)
        self.chunk = SHIFTS_PER_THREAD * self.block

    @classmethod
    def missing(cls):
        return missing_requirements(("cupy",))

    def upload(self, plan):
        import cupy as cp

        tp = plan.templates
        arrays = dict(t=plan.lc.t, y=plan.lc.y, w=plan.lc.w, widths=tp.widths,
                      strides=tp.strides, offsets=tp.offsets, a=tp.a, overshoot=tp.overshoot)
        return plan, {k: cp.asarray(v) for k, v in arrays.items()}, _module(cp, self.block, self.chunk)

    def fold_sort(self, state, periods):
        """Device (rw, w, csum): (periods, m) and (periods, m + 1), m = N + maxwidth."""
        import cupy as cp

        plan, dev, _ = state
        n = plan.lc.size
        m = n + plan.templates.maxwidth
        # TLS's fastmath fold: x = t * (1 / P) rounded on its own, phase = x - floor(x);
        # separate elementwise kernels, so no FMA contraction changes phase ties
        phase = dev["t"][None, :] * cp.asarray(1.0 / np.asarray(periods))[:, None]
        phase -= cp.floor(phase)
        order = cp.argsort(phase, axis=1)  # thrust stable sort: ties keep input order
        del phase
        order = order[:, cp.arange(m) % n]
        flux = dev["y"][order]
        w = dev["w"][order]
        del order
        csum = cp.zeros((len(periods), m + 1))
        csum[:, 1:] = cp.cumsum(flux, axis=1)
        rw = (1.0 - flux) * w
        return rw, w, csum

    def chi2_scan(self, state, folded, periods, lo, hi):
        import cupy as cp

        plan, dev, module = state
        tp = plan.templates
        rw, w, csum = folded
        m = rw.shape[1]
        jobs = scan_jobs(lo, hi, tp.widths, tp.strides, m, self.chunk)
        b = len(periods)
        job_gain = cp.zeros(max(jobs.size, 1))
        job_index = cp.full(max(jobs.size, 1), -1, np.int32)
        job_depth = cp.zeros(max(jobs.size, 1))
        if jobs.size:
            module.get_function("scan_jobs")(
                (jobs.size,), (self.block,),
                (rw, w, csum, np.int32(m), cp.asarray(jobs.period), cp.asarray(jobs.width),
                 cp.asarray(jobs.first), dev["widths"], dev["strides"], dev["offsets"], dev["a"],
                 dev["overshoot"], np.float64(tp.depth_min), np.float64(tp.signal_depth),
                 job_gain, job_index, job_depth),
            )
        gain = cp.empty(b)
        index = cp.empty(b, np.int32)
        depth = cp.empty(b)
        module.get_function("reduce_jobs")(
            (-(-b // self.block),), (self.block,),
            (job_gain, job_index, job_depth, cp.asarray(jobs.period_start), np.int32(b),
             gain, index, depth),
        )
        return PeriodStats.from_gains(plan, gain.get(), index.get(), depth.get())

    def synchronize(self):
        import cupy as cp

        cp.cuda.get_current_stream().synchronize()

    def max_batch_periods(self, plan):
        import cupy as cp

        free, _ = cp.cuda.runtime.memGetInfo()
        budget = min(BATCH_BYTES, (free + cp.get_default_memory_pool().free_bytes()) // 2)
        return int(np.clip(budget // bytes_per_period(plan), 1, MAX_BATCH_PERIODS))

    def device_name(self):
        import cupy as cp

        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        return f"GPU: {props['name'].decode()}"
