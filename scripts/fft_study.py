"""The exact chi2 scan by FFT correlation, measured as a lead (issue 12; not a
backend).

Per period, AR_i = sum_j a_j u_(i+j) for every shift i of one width is the
circular correlation of the fold's u = (1 - F) W (length N) with the
template: irfft(rfft(u) * conj(rfft(a))), one inverse FFT per (period,
width) pair (``../shared/reference/exact_pruning.md``, "Exact FFT
correlation"). It is computed in float32; the gains G = 2 k AR - k^2 A2
(k from the float64 box depth, uniform weights: A2 = W sum a^2) get the
float32 error allowance 2 |k| E with

    E = (16 log2 N + 4) eps32 ||u||_2 ||a||_1

(Higham's normwise FFT bound, ch. 24, for the forward and inverse
transforms, the product with the rounded template spectrum and u's rounding
to float32; ||conj(rfft(a))||_inf <= ||a||_1). Every listed shift whose
upper gain reaches the period's best lower gain is re-evaluated in float64,
so the period's best (width, shift) and chi2 are the exact ones if E holds.
It is proven for radix-2 transforms with accurate twiddles only. cuFFT
publishes no error bound, so for numpy's and cuFFT's transforms E is an
allowance checked by measurement (the study reports the largest error seen
against float64 dot products as a fraction of E), not a proof. For
``fft_scan.cu``'s own passes ``fft_bound.error_scale`` proves one, pass by
pass, and the fused search uses it (0.9 of this E for 4,320 = 18 16 15).

``--cpu``: numpy's float32 FFT on sampled periods of the K2-like and
TESS-like timing cases, the recheck, and the same best gain, width and shift
as brute force in float64 (asserted). ``--gpu``: the whole search on the
GPU in chunks of periods (CuPy for the fold, cuFFT for the transforms,
numba.cuda kernels for the gains and the recheck; CUDA events per stage),
its per-period chi2 against the ``cpu`` backend's, warm medians against
``pruned`` in the same process; ``--gpu --fused``: the same with
``fft_scan.cu``, one block per period doing every transform (the fold's
rfft included), gain and re-check in shared memory; its screen is float32 throughout, box depths
included (``box_prefix``'s proven margin; the pad's terms in the .cu).

    PYTHONPATH=.:scripts python scripts/fft_study.py --cpu --periods 40
    PYTHONPATH=.:scripts python scripts/fft_study.py --gpu --cases k2 tess --repeats 5
    PYTHONPATH=.:scripts python scripts/fft_study.py --gpu --fused 256 256:global:min3 256:transforms --cases k2
    PYTHONPATH=.:scripts python scripts/fft_study.py --rates 4320 4860 5120 18000 20480
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import time

import numpy as np
from numba import cuda

import backends
import fft_bound  # scripts/ is on sys.path when run as a script
from backends.implementations.cpu import shift_end
from block_bound_study import sampled_folds, uniform_case
from gpu_timing import case_plan

EPS32 = float(np.finfo(np.float32).eps)
BLOCK = 128  # threads per block of the numba kernels


def radix2_error_scale(n) -> float:
    """E / (||u||_2 ||a||_1): Higham's radix-2 allowance on one float32 AR of
    an N-point correlation (numpy's and cuFFT's transforms, where it is
    measured, not proven)."""
    return (16.0 * math.log2(n) + 4.0) * EPS32


def box_prefix(xp, f):
    """(q, K) per fold row of ``f``: q, the prefix sums of 1 - F in float32
    (leading 0), and K with |box32 - TLS's box| <= K / d + u64 for every
    window of d samples, where box32 = (q[i + d] - q[i]) * fl32(1 / d) in
    float32 and TLS's box = 1 - (c[i + d] - c[i]) / d in float64 from F's
    prefix sums c summed in any order (fft_scan.cu's float32 screen).

    The float64 sums err by at most gamma_m sum|F| (c) and gamma_m sum|1 - F|
    plus u64 sum|1 - F| (1 - F, then its sums), the rounding to float32 by u32
    max|Q|; box32's subtraction and scaling add 3 u32 of 2 max|Q| / d.
    """
    m = f.shape[1]
    g = 1.0 - f
    prefix = xp.zeros((f.shape[0], m + 1))
    xp.cumsum(g, axis=1, out=prefix[:, 1:])
    u64, u32 = fft_bound.U64, fft_bound.U32
    k = ((2 * fft_bound.gamma(m, u64) + 4 * u64) * (xp.abs(f).sum(axis=1) + xp.abs(g).sum(axis=1))
         + 8.1 * u32 * xp.abs(prefix).max(axis=1))
    return prefix.astype(xp.float32), k


def template_spectra(plan, n) -> np.ndarray:
    """conj(rfft(a)) of every template zero-padded to ``n``, rounded to complex64."""
    tp = plan.templates
    padded = np.zeros((tp.widths.size, n))
    for wi in range(tp.widths.size):
        padded[wi, :tp.lengths[wi]] = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
    return np.conj(np.fft.rfft(padded, axis=1)).astype(np.complex64)


def template_constants(plan):
    """Per template: (A2 = W sum a^2, ||a||_1, k per unit box depth, shifts listed per fold)."""
    tp, lc = plan.templates, plan.lc
    n, m = lc.size, lc.size + tp.maxwidth
    a = [tp.a[tp.offsets[wi]:tp.offsets[wi + 1]] for wi in range(tp.widths.size)]
    return (np.array([lc.uniform_weight * float(x @ x) for x in a]),
            np.array([float(np.abs(x).sum()) for x in a]),
            tp.kscale,
            np.array([(shift_end(m, n, int(d), int(s)) - 1) // int(s) + 1
                      for d, s in zip(tp.widths, tp.strides)], np.int32))


# --- the CPU check: float32 FFT + recheck against float64 brute force ---------------------------

def cpu_check(case, n_periods, seed=0) -> dict:
    plan, periods = uniform_case(case)
    tp, lc = plan.templates, plan.lc
    n = lc.size
    spectra = template_spectra(plan, n)
    a2, a1, _, _ = template_constants(plan)
    tally = dict(periods=0, listed=0, candidates=0, worst_error_of_E=0.0)
    for (u, *_), widths, _threshold in sampled_folds(plan, periods, n_periods, seed):
        ar32 = np.fft.irfft(np.fft.rfft(u[:n].astype(np.float32))[None, :] * spectra[[w[0] for w in widths]],
                            n=n, axis=1)
        unorm = float(np.linalg.norm(u[:n]))
        exact_best, lower, rows = (-np.inf, 0, 0), -np.inf, []
        for (wi, shifts, box, k, listed, *_), ar in zip(widths, ar32):
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            ar64 = np.lib.stride_tricks.sliding_window_view(u, a.size)[shifts] @ a
            approx = ar[shifts % n].astype(np.float64)
            allowance = radix2_error_scale(n) * unorm * a1[wi]
            tally["worst_error_of_E"] = max(tally["worst_error_of_E"], float(np.abs(approx - ar64).max()) / allowance)
            g_hat, pad = 2 * k * approx - k * k * a2[wi], 2 * np.abs(k) * allowance
            g = 2 * k * ar64 - k * k * a2[wi]
            if listed.any():
                lower = max(lower, float((g_hat - pad)[listed].max()))
                q = int(np.argmax(np.where(listed, g, -np.inf)))
                if g[q] > exact_best[0]:
                    exact_best = (float(g[q]), wi, int(shifts[q]))
            rows.append((wi, shifts, listed, g_hat + pad, g))
        fft_best = (-np.inf, 0, 0)
        for wi, shifts, listed, upper, g in rows:
            candidate = listed & (upper >= lower)
            tally["listed"] += int(listed.sum())
            tally["candidates"] += int(candidate.sum())
            if candidate.any():
                q = int(np.argmax(np.where(candidate, g, -np.inf)))
                if g[q] > fft_best[0]:
                    fft_best = (float(g[q]), wi, int(shifts[q]))
        assert fft_best == exact_best, (case, fft_best, exact_best)
        tally["periods"] += 1
    return tally


# --- the GPU path ------------------------------------------------------------------------------

@cuda.jit
def correlate_spectra(out, spectrum, spectra, pair_row, pair_wi):
    """out[q] = rfft(u of q's period) * conj(rfft(a of q's width)), zero for padding pairs."""
    q, k = cuda.blockIdx.x, cuda.blockIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    if k < out.shape[1]:
        wi = pair_wi[q]
        out[q, k] = spectrum[pair_row[q], k] * spectra[wi, k] if wi >= 0 else 0j


@cuda.jit(device=True)
def screened_gain(cs, row, i, d, ks, a2w, ar, e, depth_min):
    """(listed, k, float32-AR gain, its allowance) of shift ``i`` of width ``d`` in fold ``row``."""
    box = 1.0 - (cs[row, i + d] - cs[row, i]) / d
    k = box * ks
    return box > depth_min, k, 2.0 * k * ar - k * k * a2w, 2.0 * abs(k) * e


@cuda.jit
def gain_bounds(ar, cs, pair_row, pair_wi, widths, strides, n_shifts, kscale, a2, allowance, depth_min, n,
                out_lower, out_upper):
    """Per (period, width) pair (one block): the largest lower and upper gain
    over its listed shifts, -inf where none is listed."""
    q, tid = cuda.blockIdx.x, cuda.threadIdx.x
    lo_s = cuda.shared.array(BLOCK, np.float64)
    hi_s = cuda.shared.array(BLOCK, np.float64)
    lower, upper = -np.inf, -np.inf
    wi, row = pair_wi[q], pair_row[q]
    if wi >= 0:
        d, stride, ks, a2w, e = widths[wi], strides[wi], kscale[wi], a2[wi], allowance[q]
        for s in range(tid, n_shifts[wi], BLOCK):
            i = s * stride
            listed, _k, g, pad = screened_gain(cs, row, i, d, ks, a2w, ar[q, i % n], e, depth_min)
            if listed:
                lower = max(lower, g - pad)
                upper = max(upper, g + pad)
    lo_s[tid], hi_s[tid] = lower, upper
    cuda.syncthreads()
    half = BLOCK // 2
    while half > 0:
        if tid < half:
            lo_s[tid] = max(lo_s[tid], lo_s[tid + half])
            hi_s[tid] = max(hi_s[tid], hi_s[tid + half])
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        out_lower[q], out_upper[q] = lo_s[0], hi_s[0]


@cuda.jit
def recheck(todo, ar, cs, u, pair_row, pair_wi, widths, strides, n_shifts, offsets, a, kscale, a2, allowance,
            depth_min, n, threshold, out_gain, out_shift, count):
    """Per listed pair whose upper gain reaches its period's threshold (one
    block each): the exact float64 gain of every shift whose upper gain does,
    the best one (the first shift on a tie) and how many were evaluated."""
    q, tid = todo[cuda.blockIdx.x], cuda.threadIdx.x
    g_s = cuda.shared.array(BLOCK, np.float64)
    s_s = cuda.shared.array(BLOCK, np.int64)
    wi, row = pair_wi[q], pair_row[q]
    d, stride, ks, a2w, e, t = widths[wi], strides[wi], kscale[wi], a2[wi], allowance[q], threshold[row]
    first, length = offsets[wi], offsets[wi + 1] - offsets[wi]
    best, best_s, evaluated = -np.inf, n_shifts[wi], 0
    for s in range(tid, n_shifts[wi], BLOCK):
        i = s * stride
        listed, k, g_hat, pad = screened_gain(cs, row, i, d, ks, a2w, ar[q, i % n], e, depth_min)
        if listed and g_hat + pad >= t:
            dot = 0.0
            for j in range(length):
                dot += a[first + j] * u[row, i + j]
            g = 2.0 * k * dot - k * k * a2w
            evaluated += 1
            if g > best:
                best, best_s = g, s
    g_s[tid], s_s[tid] = best, best_s
    cuda.atomic.add(count, 0, evaluated)
    cuda.syncthreads()
    half = BLOCK // 2
    while half > 0:
        if tid < half:
            other_g, other_s = g_s[tid + half], s_s[tid + half]
            if other_g > g_s[tid] or (other_g == g_s[tid] and other_s < s_s[tid]):
                g_s[tid], s_s[tid] = other_g, other_s
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        out_gain[q], out_shift[q] = g_s[0], s_s[0]


class FFTSearch:
    """The whole search of one plan by FFT correlation, in chunks of
    ``chunk`` periods, with CuPy (``xp``), cuFFT and numba.cuda kernels;
    transforms of ``size`` points (N unless given)."""

    def __init__(self, xp, plan, periods, chunk=2048, size=None):
        tp, lc = plan.templates, plan.lc
        if not lc.uniform_weight > 0:
            raise SystemExit("uniform weights only")
        self.xp, self.plan, self.periods, self.chunk = xp, plan, np.asarray(periods, np.float64), chunk
        self.n, self.m = lc.size, lc.size + tp.maxwidth
        self.size = size or self.n
        lo, hi = plan.width_windows(self.periods)
        self.lo, self.nd = lo, hi - lo
        self.slots = int(self.nd.max())
        self.constants = a2, a1, kscale, n_shifts = template_constants(plan)
        self.a1 = a1
        put = xp.asarray
        self.spectra = put(template_spectra(plan, self.size))
        self.t, self.y, self.w = put(lc.t), put(lc.y), put(lc.w)
        self.dev = dict(widths=put(tp.widths.astype(np.int64)), strides=put(tp.strides.astype(np.int64)),
                        n_shifts=put(n_shifts.astype(np.int64)), offsets=put(tp.offsets), a=put(tp.a),
                        kscale=put(kscale), a2=put(a2))
        self.times = {}
        self.evaluated = 0

    def _clock(self, name, start):
        """Adds the CUDA events' time since ``start`` to stage ``name``."""
        xp = self.xp
        end = xp.cuda.Event()
        end.record()
        end.synchronize()
        self.times[name] = self.times.get(name, 0.0) + xp.cuda.get_elapsed_time(start, end) / 1e3
        return end

    def _start(self):
        e = self.xp.cuda.Event()
        e.record()
        return e

    def search(self):
        """(gain, width index or -1, shift) per period."""
        self.times, self.evaluated = {}, 0
        parts = [self._chunk(p0, min(p0 + self.chunk, self.periods.size))
                 for p0 in range(0, self.periods.size, self.chunk)]
        return tuple(np.concatenate(x) for x in zip(*parts))

    def _fold(self, p0, p1):
        """(u, prefix sums of F, F) of the patched folds of periods p0:p1, as
        ``chunk`` rows (the last period repeated: fixed shapes keep cuFFT's
        plans cached)."""
        xp, n, m = self.xp, self.n, self.m
        periods = np.resize(self.periods[p0:p1], self.chunk)
        phase = self.t[None, :] * xp.asarray(1.0 / periods)[:, None]  # as TLS's fastmath fold rounds it
        phase -= xp.floor(phase)
        order = xp.argsort(phase, axis=1, kind="stable")
        order = xp.concatenate([order, order[:, :m - n]], axis=1)
        f = self.y[order]
        cs = xp.zeros((self.chunk, m + 1))
        xp.cumsum(f, axis=1, out=cs[:, 1:])
        return (1.0 - f) * self.w[order], cs, f

    def _chunk(self, p0, p1):
        xp, n, m, dev = self.xp, self.n, self.m, self.dev
        rows = self.chunk  # fixed shapes: cuFFT plans are cached per shape
        clock = self._start()
        u, cs, _ = self._fold(p0, p1)
        u32 = u[:, :n].astype(xp.float32)
        unorm = xp.sqrt(xp.einsum("ij,ij->i", u[:, :n], u[:, :n]))
        clock = self._clock("fold", clock)

        spectrum = xp.fft.rfft(u32, axis=1)
        clock = self._clock("rfft", clock)

        nd, lo = self.nd[p0:p1], self.lo[p0:p1]
        pair_row = np.repeat(np.arange(p1 - p0), nd)
        pair_wi = (np.repeat(lo, nd) + np.arange(nd.sum()) - np.repeat(np.cumsum(nd) - nd, nd))
        pairs = -(-pair_row.size // 1024) * 1024  # padded to few shapes
        pad = pairs - pair_row.size
        pair_row_d = xp.asarray(np.concatenate([pair_row, np.zeros(pad, np.int64)]))
        pair_wi_d = xp.asarray(np.concatenate([pair_wi, np.full(pad, -1, np.int64)]))
        allowance = radix2_error_scale(n) * unorm[pair_row_d] * xp.asarray(self.a1)[xp.maximum(pair_wi_d, 0)]
        product = xp.empty((pairs, n // 2 + 1), xp.complex64)
        correlate_spectra[(pairs, -(-product.shape[1] // BLOCK)), BLOCK](product, spectrum, self.spectra,
                                                                          pair_row_d, pair_wi_d)
        clock = self._clock("product", clock)
        ar = xp.fft.irfft(product, n=n, axis=1)
        del product
        clock = self._clock("irfft", clock)

        lower, upper = xp.empty(pairs), xp.empty(pairs)
        gain_bounds[pairs, BLOCK](ar, cs, pair_row_d, pair_wi_d, dev["widths"], dev["strides"], dev["n_shifts"],
                                  dev["kscale"], dev["a2"], allowance, self.plan.templates.depth_min, n, lower,
                                  upper)
        slot = xp.asarray(np.concatenate([pair_row * self.slots + pair_wi - np.repeat(lo, nd),
                                          np.full(pad, rows * self.slots, np.int64)]))
        table = xp.full(rows * self.slots + 1, -np.inf)
        table[slot] = lower
        threshold = table[:-1].reshape(rows, self.slots).max(axis=1)
        todo = xp.flatnonzero((upper >= threshold[pair_row_d]) & (pair_wi_d >= 0))
        clock = self._clock("gains", clock)

        gain, shift = xp.full(pairs, -np.inf), xp.zeros(pairs, np.int64)
        count = xp.zeros(1, np.int64)
        if todo.size:
            recheck[int(todo.size), BLOCK](todo, ar, cs, u, pair_row_d, pair_wi_d, dev["widths"], dev["strides"],
                                           dev["n_shifts"], dev["offsets"], dev["a"], dev["kscale"], dev["a2"],
                                           allowance, self.plan.templates.depth_min, n, threshold, gain, shift,
                                           count)
        table[:] = -np.inf
        table[slot] = gain
        table = table[:-1].reshape(rows, self.slots)
        best_slot = table.argmax(axis=1)
        best = table.max(axis=1)
        flat = xp.full(rows * self.slots + 1, 0, np.int64)
        flat[slot] = shift
        best_shift = flat[:-1].reshape(rows, self.slots)[xp.arange(rows), best_slot]
        clock = self._clock("recheck", clock)
        self.evaluated += int(count[0])
        best, best_slot, best_shift = best[:p1 - p0].get(), best_slot[:p1 - p0].get(), best_shift[:p1 - p0].get()
        none = ~np.isfinite(best)
        strides = self.plan.templates.strides
        width = np.where(none, -1, lo + best_slot)
        return (np.where(none, 0.0, best), width,
                np.where(none, 0, best_shift * strides[np.maximum(width, 0)]))


def smooth_size(n) -> int:
    """The smallest 2^a 3^b 5^c >= n."""
    while True:
        m = n
        for r in (2, 3, 5):
            while m % r == 0:
                m //= r
        if m == 1:
            return n
        n += 1


RADICES = (2, 3, 4, 5, 6, 8, 9, 10, 12, 15, 16, 18)  # fft_scan.cu's passes


def radix_plan(size) -> list:
    """The fewest Stockham passes of ``fft_scan.cu`` whose radices multiply
    to ``size`` (5-smooth), larger radices first."""
    @functools.lru_cache(maxsize=None)
    def best(m):
        if m == 1:
            return ()
        options = [(r,) + best(m // r) for r in RADICES if m % r == 0]
        return min(options, key=lambda p: (len(p), [-r for r in p]))
    return list(best(size))


class FusedFFTSearch(FFTSearch):
    """The same search with ``fft_scan.cu``: one block per period does its
    fold's rfft, every width's inverse transform, gains and float64 re-check
    in shared memory (cupy only). M = N when N is 5-smooth (circular), else the smallest
    5-smooth size holding the patched fold (zero-padded)."""

    def __init__(self, cupy, plan, periods, chunk=2048, threads=256, stages=2, cs_global=False, min_blocks=1,
                 radices=None, defines=()):
        n = plan.lc.size
        size = n if smooth_size(n) == n else smooth_size(n + plan.templates.maxwidth)
        super().__init__(cupy, plan, periods, chunk, size)
        self.threads, self.stages, self.epilogue = threads, stages, stages == 2
        a2, a1, kscale, n_shifts = self.constants
        tp = plan.templates
        self.args = [cupy.asarray(x) for x in (
            tp.widths.astype(np.int32), tp.strides.astype(np.int32), 1.0 / tp.widths, n_shifts.astype(np.int32),
            tp.offsets.astype(np.int64), tp.a, kscale, a2, a1)]
        twiddle = np.exp(2j * np.pi * np.arange(size) / size).astype(np.complex64)
        radix = list(radices or radix_plan(size))
        if int(np.prod(radix)) != size or not set(radix) <= set(RADICES):
            raise SystemExit(f"radices {radix} do not make a transform of {size} from {RADICES}")
        self.twiddle, self.radix = cupy.asarray(twiddle), cupy.asarray(np.array(radix, np.int32))
        self.escale = fft_bound.error_scale(radix)  # proven for these passes
        self.passes = len(radix)
        source = fft_bound.SOURCE.read_text()
        options = (("--std=c++17", f"-DTHREADS={threads}", f"-DMIN_BLOCKS={min_blocks}")
                   + (("-DCS_GLOBAL",) if cs_global else ()) + tuple(f"-D{d}" for d in defines))
        self.kernel = cupy.RawModule(code=source, options=options).get_function("fft_scan")
        # fft_scan.cu's buffers, the screen's prefix sums (unless read from global memory) and queue
        prefix = 0 if cs_global else -(-(self.m + 1) * 4 // 16) * 16
        self.smem = 2 * size * 8 + prefix + 256 * 16
        limit = cupy.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"]
        if self.smem > limit:
            raise SystemExit(f"fft_scan.cu needs {self.smem} bytes of shared memory for M = {size}; "
                             f"this GPU allows {limit} per block")
        self.kernel.max_dynamic_shared_size_bytes = self.smem
        self.fold_spectra = cupy.empty((chunk, size // 2 + 1), cupy.complex64)  # the kernel's rfft of each fold

    def search(self):
        self.overflow = self.resweeps = 0
        return super().search()

    def _chunk(self, p0, p1):
        cp, n, m, size, rows = self.xp, self.n, self.m, self.size, self.chunk
        clock = self._start()
        u, cs, f = self._fold(p0, p1)
        q, box_error = box_prefix(cp, f)
        v = u[:, :n] if size == n else u  # the fold the kernel transforms (zero-padded to size there)
        unorm = cp.sqrt(cp.einsum("ij,ij->i", v, v))
        clock = self._clock("fold", clock)
        count = p1 - p0
        lo = cp.asarray(np.resize(self.lo[p0:p1], rows).astype(np.int32))
        nd = cp.asarray(np.concatenate([self.nd[p0:p1], np.zeros(rows - count, np.int64)]).astype(np.int32))
        gain, rechecked = cp.empty(rows), cp.empty(rows, cp.int32)
        width, shift, overflow = cp.empty(rows, cp.int32), cp.empty(rows, cp.int32), cp.empty(rows, cp.int32)
        resweeps = cp.empty(rows, cp.int32)
        self.kernel((rows,), (self.threads,), (
            self.fold_spectra, self.spectra, cs, q, box_error, u, unorm, lo, nd, *self.args, self.twiddle, self.radix,
            np.int32(self.passes), np.int32(size), np.int32(n), np.int32(m), np.int32(size == n),
            np.float64(self.plan.templates.depth_min), np.float64(self.escale), np.int32(self.stages),
            gain, width, shift, rechecked, overflow, resweeps), shared_mem=self.smem)
        clock = self._clock("scan", clock)
        self.evaluated += int(rechecked[:count].sum())
        self.overflow += int(overflow[:count].sum())
        self.resweeps += int(resweeps[:count].sum())
        gain, width, shift = gain[:count].get(), width[:count].get(), shift[:count].get()
        none = width < 0
        return np.where(none, 0.0, gain), width.astype(np.int64), shift.astype(np.int64)


def compare(plan, periods, found):
    """Worst relative chi2 difference to the ``cpu`` backend and the rows that differ."""
    gain, width, _ = found
    ref = backends.get_backend("cpu").search(plan, periods)
    got = backends.protocol.PeriodStats.from_gains(plan, gain, width, np.zeros_like(gain))
    rel = np.abs(got.chi2 - ref.chi2) / np.abs(ref.chi2)
    return float(rel.max()), int((got.rows != ref.rows).sum())


def fused_search(cupy, plan, periods, chunk, spec) -> FusedFFTSearch:
    """``FusedFFTSearch`` from ``--fused``'s spec THREADS[:global][:minB][:rR.R.R][:DNAME][:transforms|:spectra]."""
    tokens = spec.split(":")
    min_blocks = next((int(t[3:]) for t in tokens if t.startswith("min")), 1)
    radices = next(([int(r) for r in t[1:].split(".")] for t in tokens if t[0] == "r"), None)
    defines = [t[1:] for t in tokens if t[0] == "D"]
    stages = 0 if "spectra" in tokens else 1 if "transforms" in tokens else 2
    return FusedFFTSearch(cupy, plan, periods, chunk, int(tokens[0]), stages, "global" in tokens, min_blocks,
                          radices, defines)


def gpu_run(cases, repeats, chunk, fused=None) -> dict:
    """Per case: the cuFFT search (``fused`` None) or ``fft_scan.cu`` at each
    of ``fused``'s specs (``--fused``), checked against ``cpu`` where it has
    the epilogue, and ``pruned`` timed in the same process (``repeats`` 0:
    one cold search each, nothing timed)."""
    import cupy as xp

    out = {}
    for case in cases:
        plan, periods = case_plan(case)
        for spec in fused or [None]:
            search = (FFTSearch(xp, plan, periods, chunk) if spec is None
                      else fused_search(xp, plan, periods, chunk, spec))
            epilogue = getattr(search, "epilogue", True)
            start = time.perf_counter()
            found = search.search()
            cold = time.perf_counter() - start
            entry = dict(method=spec or "cufft", epilogue=epilogue,
                         periods=int(periods.size), n=plan.lc.size, pairs=int(search.nd.sum()),
                         fft_size=search.size, cold_s=cold,
                         overflow=getattr(search, "overflow", 0), resweeps=getattr(search, "resweeps", 0),
                         rechecked=search.evaluated)
            if epilogue:
                entry["chi2_worst_rel"], entry["rows_differ"] = compare(plan, periods, found)
            if repeats:
                warm, stages = [], []
                for _ in range(repeats):
                    xp.cuda.Device().synchronize()
                    start = time.perf_counter()
                    search.search()
                    xp.cuda.Device().synchronize()
                    warm.append(time.perf_counter() - start)
                    stages.append(dict(search.times))
                entry.update(warm_median_s=float(np.median(warm)), warm=warm,
                             stages_median_s={k: float(np.median([s[k] for s in stages])) for k in stages[0]})
                if not fused:
                    entry["cufft_worst_error_of_E"] = cufft_error(xp, search)
            out[f"{case}_{entry['method']}"] = entry
            print(case, json.dumps(entry), flush=True)
        if repeats:
            from gpu_timing import time_backend

            out[f"{case}_pruned_warm_median_s"] = time_backend("pruned", plan, periods, repeats)[1]
            print(case, "pruned warm median", out[f"{case}_pruned_warm_median_s"], flush=True)
    return out


def cufft_error(cupy, search, n_periods=8) -> float:
    """Largest |cuFFT AR - float64 AR| / E over every shift and allowed width
    of ``n_periods`` periods spread over the grid."""
    plan, n = search.plan, search.n
    tp = plan.templates
    worst = 0.0
    for (u, *_), widths, _threshold in sampled_folds(plan, search.periods, n_periods):
        spectrum = cupy.fft.rfft(cupy.asarray(u[:n].astype(np.float32)))
        wis = np.array([w[0] for w in widths])
        ar32 = cupy.fft.irfft(spectrum[None, :] * search.spectra[wis], n=n, axis=1).get()
        unorm = float(np.linalg.norm(u[:n]))
        for wi, ar in zip(wis, ar32):
            a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
            ar64 = np.lib.stride_tricks.sliding_window_view(u, a.size)[:n] @ a
            worst = max(worst, float(np.abs(ar - ar64).max()) / (radix2_error_scale(n) * unorm * search.a1[wi]))
    return worst


def cufft_rates(sizes, batches=(256, 1024, 16384), repeats=20) -> dict:
    """Microseconds per inverse real FFT of each size in cuFFT, per batch
    size: small batches stay in L2 (what a fused kernel's transforms could
    approach), large ones stream through HBM (what the search above pays)."""
    import cupy

    out = {}
    for n in sizes:
        for batch in batches:
            x = (cupy.random.standard_normal((batch, n // 2 + 1), np.float32)
                 + 1j * cupy.random.standard_normal((batch, n // 2 + 1), np.float32)).astype(cupy.complex64)
            cupy.fft.irfft(x, n=n, axis=1)
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            for _ in range(repeats):
                cupy.fft.irfft(x, n=n, axis=1)
            end.record()
            end.synchronize()
            out[f"{n}x{batch}"] = cupy.cuda.get_elapsed_time(start, end) * 1e3 / (repeats * batch)
            del x
    print("cufft us per C2R transform:", json.dumps(out), flush=True)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu", action="store_true", help="float32 FFT + recheck vs brute force on sampled periods")
    parser.add_argument("--gpu", action="store_true", help="the whole search on the GPU, timed")
    parser.add_argument("--fused", nargs="*", metavar="THREADS[:global][:minB][:rR.R.R][:DNAME][:transforms|:spectra]",
                        help="--gpu with fft_scan.cu (one block per period) at these block sizes; ':global' "
                             "reads the prefix sums from global memory, ':minB' asks ptxas for B blocks per SM, "
                             "':rR.R.R' sets the Stockham passes' radices (radix_plan's otherwise), "
                             "':DNAME' defines NAME in fft_scan.cu (for A/B tests), "
                             "':transforms' times the spectra and transforms without the gains, ':spectra' "
                             "the spectra alone")
    parser.add_argument("--cases", nargs="+", default=["k2", "tess"])
    parser.add_argument("--periods", type=int, default=40, help="sampled periods per case (--cpu)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=2048, help="periods per chunk (--gpu)")
    parser.add_argument("--rates", type=int, nargs="*", help="cuFFT's C2R rate at these sizes")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    results = {}
    if args.cpu:
        for case in args.cases:
            t = cpu_check(case, args.periods)
            results[f"cpu_{case}"] = t
            print(case, json.dumps(t), f"candidates per listed shift {t['candidates'] / t['listed']:.2e}", flush=True)
    if args.gpu:
        results["gpu"] = gpu_run(args.cases, args.repeats, args.chunk, args.fused or None)
    if args.rates:
        results["cufft_us_per_transform"] = cufft_rates(args.rates)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
