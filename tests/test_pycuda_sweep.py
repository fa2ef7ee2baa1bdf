"""GPU, slow: exactness sweep of the PyCUDA backends against ``cpu`` on seeded
synthetic K2-like (4,320 points) and TESS-like (~19,000) light curves, one of
100,000 points, and the shipped real light curves."""

import numpy as np
import pytest

import backends
from backends.contract import assert_matches
from backends.gpu import cuda_device_count

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA GPU on this machine"),
]
synthetic = pytest.importorskip("datasets.synthetic")
real = pytest.importorskip("datasets.real")
NAMES = ["basic", "simple", "thrust"]


def _runnable(names, n):
    out = []
    for name in names:
        if backends.available_backends()[name] is None:
            if name == "simple" and n > 6000:
                continue  # beyond its shared memory (refusal tested elsewhere)
            out.append(backends.get_backend(name))
    return out


def _compare(t, y, dy, every, **options):
    plan, periods = backends.make_plan(t, y, dy, **options)
    periods = periods[::every]
    ref = backends.get_backend("cpu").search(plan, periods)
    for backend in _runnable(NAMES, plan.lc.size):
        ours = backend.search(plan, periods)
        assert_matches(ours, ref, backend.exact, backend.name)
        assert np.argmin(ours.chi2) == np.argmin(ref.chi2), backend.name


SWEEP = [("k2", s, 4320, 6) for s in range(40)] + [("tess", s, 18000, 40) for s in range(9)]


@pytest.mark.parametrize("preset,seed,ndata,every", SWEEP)
def test_synthetic_sweep(preset, seed, ndata, every):
    lc = synthetic.simulate(seed=seed, preset=preset, ndata=ndata, start=3000.0)
    _compare(lc.t, lc.y, lc.dy, every)


def test_100k_points():
    lc = synthetic.simulate(seed=99, preset="tess", baseline=140.0, ndata=100_000, start=3000.0)
    _compare(lc.t, lc.y, lc.dy, 1, period_min=9.0, period_max=9.3)


@pytest.mark.parametrize("name", real.REAL_NAMES)
def test_real_light_curves_end_to_end(name):
    lc = real.load(name)
    ref = backends.search(lc.t, lc.y, lc.dy, backend="cpu")
    for backend in _runnable(NAMES, lc.t.size):
        ours = backends.search(lc.t, lc.y, lc.dy, backend=backend)
        assert_matches(ours, ref, backend.exact, backend.name)
