"""scripts/tensor_screen_study.py (issue 12's tensor-core lead): a float16
screen with its proven allowance and a float64 re-check finds brute force's
best width and shift; tc_screen.cu's fragment addressing forms every tile's
AR within that allowance; the kernel compiles and, on a GPU, matches the
``cpu`` backend."""

import importlib.util
import shutil
import subprocess

import numpy as np
import pytest

import tensor_screen_study as tss
from backends.gpu import cuda_device_count
from backends.kernel_cache import nvcc_command
from fft_study import compare
from gpu_timing import case_plan


def test_the_half_precision_screen_and_its_recheck_find_brute_forces_best_shift():
    tallies = tss.study("k2", n_periods=2)  # asserts the best (gain, width, shift) per period and variant
    for variant, t in tallies.items():
        assert t["periods"] == 2
        assert 0 < t["worst_error_of_bound"] < 1, variant
    assert 2 <= tallies["fp16"]["rechecks"] < tallies["fp16"]["listed"] / 1000
    assert tallies["split2"]["rechecks"] <= tallies["fp16"]["rechecks"] < tallies["bf16"]["rechecks"]


def test_the_kernels_fragments_form_each_tiles_ar_within_the_allowance():
    worst = tss.emulate("k2", n_periods=1)
    assert 1e-3 < worst < 1  # a wrong lane or register mapping is off by the data's size


def test_the_banded_fragments_hold_the_template_shifted_by_the_stride_per_column():
    plan, _ = case_plan("k2")
    tables, tp = tss.Tables(plan), plan.templates
    for wi in (0, tp.widths.size - 1):
        a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
        ksteps, stride = int(tables.fields["ksteps"][wi]), int(tables.fields["stride"][wi])
        frag = tables.bfrag[tables.b_off[wi]:tables.b_off[wi] + 64 * ksteps].reshape(ksteps, 32, 2)
        band = np.zeros((16 * ksteps, 8))
        lane = np.arange(32)
        for kk in range(ksteps):
            for reg, dk in enumerate((0, 8)):
                low, high = tss.halves(frag[kk, :, reg])
                band[16 * kk + 2 * (lane & 3) + dk, lane >> 2] = low
                band[16 * kk + 2 * (lane & 3) + dk + 1, lane >> 2] = high
        scale = tables.fields["inv_scale"][wi] * tables.uscale
        for c in range(8):
            column = band[:, c] * scale
            assert np.allclose(column[stride * c:stride * c + a.size], a, rtol=2.0 ** -10)
            assert not column[:stride * c].any() and not column[stride * c + a.size:].any()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("shape", ["384:2:2", "256:1:1"])
def test_the_kernel_compiles(shape, tmp_path):
    threads, tpj, min_blocks = shape.split(":")
    cmd = nvcc_command(str(tss.SOURCE), "sm_90", {"THREADS": threads, "TPJ": tpj, "MIN_BLOCKS": min_blocks},
                       [], tmp_path / "k.cubin")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.skipif(cuda_device_count() == 0 or importlib.util.find_spec("cupy") is None,
                    reason="needs a CUDA GPU and CuPy")
@pytest.mark.parametrize("shape", [(384, 2, 2), (256, 1, 1)])
def test_the_gpu_search_equals_the_cpu_backend(shape):
    import cupy

    plan, periods = case_plan("k2")
    periods = periods[::97]
    threads, tpj, min_blocks = shape
    search = tss.TensorScreen(cupy, plan, periods, chunk=64, threads=threads, tpj=tpj, min_blocks=min_blocks)
    worst, rows_differ = compare(plan, periods, search.search())
    assert worst < 1e-10 and rows_differ == 0
    assert search.rechecked >= periods.size and not search.overflow
