"""scripts/fft_study.py (issue 12's FFT lead): float32 FFT correlation and a
float64 re-check within the allowance E find brute force's best width and
shift; E covers the FFT's error; the fused kernel's float32 box depths stay
within their proven margin; the kernel compiles without spills and, on a
GPU, matches the ``cpu`` backend."""

import importlib.util
import shutil
import subprocess

import numpy as np
import pytest

import backends
import fft_bound
import fft_study
from backends.gpu import cuda_device_count
from backends.kernel_cache import nvcc_command
from gpu_timing import case_plan
from test_cuda_sources import parse_ptxas



def test_the_fft_and_its_recheck_find_brute_forces_best_shift():
    t = fft_study.cpu_check("k2", n_periods=2)  # asserts the best (gain, width, shift) per period
    assert t["periods"] == 2
    assert 2 <= t["candidates"] < t["listed"] / 100  # the best is always re-checked, little else
    assert 0 < t["worst_error_of_E"] < 0.01


def test_the_float32_box_depth_is_within_its_proven_margin_of_the_float64_one():
    plan, periods = case_plan("k2")
    search = fft_study.FFTSearch(np, plan, periods[::1000], chunk=10)
    _, cs, f = search._fold(0, 10)
    q, k = fft_study.box_prefix(np, f)
    assert q.dtype == np.float32 and q.shape == cs.shape
    worst = 0.0
    for d in np.unique(plan.templates.widths):
        i = np.arange(search.m + 1 - d)
        box = 1.0 - (cs[:, i + d] - cs[:, i]) / d
        box32 = (q[:, i + d] - q[:, i]) * np.float32(1.0 / d)
        error = np.abs(box32.astype(np.float64) - box)
        margin = k[:, None] / d + 2.0 ** -53
        assert (error <= margin).all()
        worst = max(worst, float((error / margin).max()))
    assert worst > 0.01  # a margin of the errors' size, not far above them
    assert (k / plan.templates.widths.min() < 1e-3 * plan.templates.depth_min).all()


def test_the_k2_like_size_takes_three_passes():
    assert fft_study.radix_plan(4320) == [18, 16, 15]


@pytest.mark.parametrize("n", [7, 97, 4320, 4838, 18000, 20161])
def test_fft_sizes_are_the_smallest_five_smooth_ones_and_their_passes_multiply_to_them(n):
    size = fft_study.smooth_size(n)
    assert size >= n and all(fft_study.smooth_size(x) != x for x in range(n, size))
    passes = fft_study.radix_plan(size)
    assert set(passes) <= set(fft_study.RADICES) and int(np.prod(passes)) == size
    assert len(passes) <= -(-np.log(size) // np.log(18)) + 1  # close to the fewest radix-18 passes


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("threads", [256, 512])
@pytest.mark.parametrize("cs_global", [False, True])
def test_the_fused_kernel_compiles_without_spills(threads, cs_global, tmp_path):
    options = ["-Xptxas", "-v"] + (["-DCS_GLOBAL"] if cs_global else [])
    cmd = nvcc_command(str(fft_bound.SOURCE), "sm_90", {"THREADS": threads}, options, tmp_path / "k.cubin")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    registers, spill_stores, spill_loads, stack = parse_ptxas(done.stderr)["fft_scan"]
    assert spill_stores == spill_loads == stack == 0


@pytest.mark.skipif(cuda_device_count() == 0 or importlib.util.find_spec("cupy") is None,
                    reason="needs a CUDA GPU and CuPy")
@pytest.mark.parametrize("fused", [None, "shared", "global"])
def test_every_gpu_search_equals_the_cpu_backend(fused):
    import cupy

    plan, periods = case_plan("k2")
    periods = periods[::97]
    search = (fft_study.FFTSearch(cupy, plan, periods, chunk=64) if fused is None
              else fft_study.FusedFFTSearch(cupy, plan, periods, chunk=64, cs_global=fused == "global"))
    worst, rows_differ = fft_study.compare(plan, periods, search.search())
    assert worst < 1e-10 and rows_differ == 0
    assert search.evaluated >= periods.size
    assert not getattr(search, "overflow", 0)
