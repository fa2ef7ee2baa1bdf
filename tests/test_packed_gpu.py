"""GPU: ``simple``'s packed launches (many light curves per launch, CUDA
streams, pinned memory) give exactly what it gives one light curve at a time,
and the packed ``search_batch`` gives what ``backends.search`` gives."""

import numpy as np
import pytest

import backends
from backends import BatchError, search_batch
from backends.contract import assert_matches
from backends.gpu import cuda_device_count
from backends.implementations import simple
from backends.protocol import InputTooLarge
from tests.conftest import box_light_curve

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA GPU on this machine"),
]
CURVES = {  # different lengths (block sizes 32, 128, 256) and grids
    "n384": (dict(days=8.0, seed=1), dict(period_min=1.0, period_max=3.0)),
    "n960": (dict(days=20.0, seed=2), dict(period_min=2.0, period_max=6.0)),
    "n2400": (dict(days=50.0, seed=3, epoch=3000.0), dict(period_min=4.0, period_max=9.0)),
    "n1100": (dict(days=23.0, seed=4, depth=0.0), dict(period_min=2.0, period_max=4.0)),
}
TOO_BIG = (dict(days=30.0, cadence_min=2.0, seed=8), dict(period_min=5.0, period_max=5.1))


def simple_backend():
    why = backends.available_backends()["simple"]
    if why is not None:
        pytest.skip(f"simple: {why}")
    return simple.SimpleBackend()


@pytest.fixture(scope="module")
def plans():
    return [backends.make_plan(*box_light_curve(**lc), **grid) for lc, grid in CURVES.values()]


@pytest.mark.parametrize("launch_macs", [simple.LAUNCH_MACS, 2e8])
def test_packed_equals_one_at_a_time(plans, launch_macs, monkeypatch):
    alone = [simple_backend().search(plan, periods) for plan, periods in plans]
    monkeypatch.setattr(simple, "LAUNCH_MACS", launch_macs)  # 2e8: many launches, streams reused
    backend = simple_backend()
    jobs = plans + plans[:1]  # the same light curve twice in one pack
    packed = backend.search_many(jobs)
    for got, ref in zip(packed, alone + alone[:1]):
        np.testing.assert_array_equal(got.chi2, ref.chi2)
        np.testing.assert_array_equal(got.rows, ref.rows)
        np.testing.assert_array_equal(got.depths, ref.depths)
    again = backend.search_many(jobs)  # warm: buffers kept
    np.testing.assert_array_equal(again[2].chi2, packed[2].chi2)
    assert backend.timings["chi2_scan"] > 0 and backend.timings["upload"] > 0


def test_packed_matches_the_cpu_backend(plans):
    backend = simple_backend()
    packed = backend.search_many(plans)
    for (plan, periods), got in zip(plans, packed):
        ref = backends.get_backend("cpu").search(plan, periods)
        assert_matches(got, ref, backend.exact, "simple, packed")
        assert np.argmin(got.chi2) == np.argmin(ref.chi2)


def test_a_curve_simple_refuses_stops_the_pack_before_any_launch(plans):
    big = backends.make_plan(*box_light_curve(**TOO_BIG[0]), **TOO_BIG[1])
    backend = simple_backend()
    with pytest.raises(InputTooLarge, match="light curve 2: .*shared memory"):
        backend.search_many(plans[:2] + [big] + plans[2:])
    assert backend.timings["chi2_scan"] == 0.0


def test_packed_batch_equals_search_one_by_one():
    items = [box_light_curve(**lc) for lc, _ in CURVES.values()][:3]
    options = dict(period_min=2.0, period_max=6.0)
    too_big = box_light_curve(**TOO_BIG[0])
    out = search_batch(items + [too_big], backend="simple", chunk_size=2, **options)
    assert isinstance(out[3], BatchError) and out[3].error == "InputTooLarge"
    for (t, y, dy), got in zip(items, out):
        ref = backends.search(t, y, dy, backend="simple", **options)
        np.testing.assert_array_equal(got.chi2, ref.chi2)
        for key in ("period", "T0", "duration", "depth", "SDE", "snr"):
            assert got[key] == ref[key], key
        assert got.meta["backend"] == "simple" and got.meta["device"] == ref.meta["device"]
    auto = search_batch([too_big], backend="auto", period_min=5.0, period_max=5.1)
    assert auto[0].meta["backend"] != "simple"  # auto searched it with a backend that holds it
