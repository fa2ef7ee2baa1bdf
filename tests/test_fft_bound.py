"""scripts/fft_bound.py: fft_scan.cu's butterflies, replayed, are the inverse
DFT; float32 arithmetic in their order stays within the error bound the
replay proves; the bound is no looser than Higham's for radix 2; on a GPU the
kernel's own butterflies equal the replay bit for bit without FMA
contraction and stay within the bound with it."""

import importlib.util
import math

import numpy as np
import pytest

import fft_bound
import fft_study
from backends.gpu import cuda_device_count


class Float32:
    """A float32 value with the operations ``fft_bound.dft`` applies."""

    def __init__(self, v):
        self.v = np.float32(v)

    def __add__(self, other):
        return Float32(self.v + other.v)

    def __neg__(self):
        return Float32(-self.v)

    def __sub__(self, other):
        return Float32(self.v - other.v)

    def times(self, stored, exact):
        return Float32(self.v * np.float32(stored))


def inverse_dft_map(r):
    w = np.exp(2j * np.pi * np.outer(np.arange(r), np.arange(r)) / r)
    out = np.zeros((2 * r, 2 * r))
    out[0::2, 0::2], out[0::2, 1::2], out[1::2, 0::2], out[1::2, 1::2] = w.real, -w.imag, w.imag, w.real
    return out


@pytest.mark.parametrize("r", fft_study.RADICES)
def test_each_butterfly_replayed_is_the_inverse_dft(r):
    exact, _ = fft_bound.butterfly(r)
    assert np.abs(exact - inverse_dft_map(r)).max() < 1e-13


def replay(r, x) -> np.ndarray:
    """``fft_bound.dft`` of the 2r float32 parts ``x``, in float32."""
    v = [fft_bound.Complex(Float32(x[2 * j]), Float32(x[2 * j + 1])) for j in range(r)]
    return np.array([part.v for y in fft_bound.dft(r, v) for part in (y.x, y.y)], float)


@pytest.mark.parametrize("r", fft_study.RADICES)
def test_float32_butterflies_stay_within_the_proven_bound(r):
    exact, g = fft_bound.butterfly(r)
    worst = 0.0
    for x in np.random.default_rng(r).standard_normal((200, 2 * r)).astype(np.float32):
        got = replay(r, x)
        error = np.abs(got - exact @ x.astype(float))
        bound = g @ np.abs(x.astype(float))
        assert (error <= bound).all()
        worst = max(worst, float((error / bound).max()))
    assert worst > 0.02  # the bound is of the errors' size


def test_a_radix_2_pass_is_bounded_no_looser_than_highams():
    mu = fft_bound.U32 + 1e-15
    assert fft_bound.pass_error(2) <= mu + fft_bound.gamma(4) * (math.sqrt(2) + mu)


def test_the_k2_like_kernels_allowance_is_proven_and_below_the_radix_2_figure():
    radices = fft_study.radix_plan(4320)
    assert 0 < fft_bound.error_scale(radices) < fft_study.radix2_error_scale(4320)
    assert fft_bound.transform_error(radices) > sum(fft_bound.pass_error(r) for r in radices)


BUTTERFLIES = r'''
extern "C" __global__ void butterflies(const float2* in, float2* out, int count) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= count) return;
    float2 v[RADIX];
    for (int j = 0; j < RADIX; ++j) v[j] = in[b * RADIX + j];
    dft<RADIX>(v);
    for (int j = 0; j < RADIX; ++j) out[b * RADIX + j] = v[j];
}
'''


@pytest.mark.skipif(cuda_device_count() == 0 or importlib.util.find_spec("cupy") is None,
                    reason="needs a CUDA GPU and CuPy")
@pytest.mark.parametrize("r", fft_study.RADICES)
def test_the_cuda_butterflies_are_the_replayed_ones(r):
    """Without FMA contraction the kernel's dft<R> equals the float32 replay
    bit for bit (the replay follows the source's order of operations); with
    it (nvcc's default) it stays within the proven bound."""
    import cupy

    exact, g = fft_bound.butterfly(r)
    x = np.random.default_rng(r).standard_normal((256, 2 * r)).astype(np.float32)
    replayed = np.array([replay(r, row) for row in x])
    source = fft_bound.SOURCE.read_text() + BUTTERFLIES
    for fmad in ("false", "true"):
        kernel = cupy.RawModule(code=source, options=("--std=c++17", f"-DRADIX={r}", f"--fmad={fmad}")
                                ).get_function("butterflies")
        out = cupy.empty_like(cupy.asarray(x))
        kernel((1,), (256,), (cupy.asarray(x), out, np.int32(256)))
        got = out.get()
        if fmad == "false":
            assert np.array_equal(got, replayed)
        error = np.abs(got.astype(float) - x.astype(float) @ exact.T)
        assert (error <= np.abs(x.astype(float)) @ g.T).all()
