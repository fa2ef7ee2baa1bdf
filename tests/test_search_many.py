"""``TLSBackend.search_many``, the packed ``search_batch`` (plans, one
search_many per chunk, TLS's results from ``backends.statistics``) on the cpu
backend, and ``simple``'s packed host path on a stand-in for the driver."""


import numpy as np
import pytest
from conftest import FakeDriver, box_light_curve, fake_pycuda

import backends
from backends import BatchError, packing, search_batch
from backends.implementations import simple
from backends.protocol import InputTooLarge

OPTIONS = {"period_min": 3.0, "period_max": 6.0}


@pytest.fixture(scope="module")
def curves():
    return [box_light_curve(days=d, seed=k) for k, d in enumerate((16.0, 13.0, 18.0))]


@pytest.fixture(scope="module")
def plans(curves):
    return [backends.make_plan(*c, **OPTIONS) for c in curves]


def test_default_search_many_is_one_search_each(plans):
    cpu = backends.get_backend("cpu")
    seen, found = [], []
    many = cpu.search_many(plans, progress=seen.append, found=lambda k, stats: found.append((k, stats)))
    for (plan, periods), stats in zip(plans, many):
        np.testing.assert_array_equal(stats.chi2, cpu.search(plan, periods).chi2)
    assert sum(seen) == sum(p.size for _, p in plans)
    assert [k for k, _ in found] == [0, 1, 2] and all(s is many[k] for k, s in found)
    assert cpu.search_many([]) == []


def test_batch_makes_a_curves_results_while_the_next_is_searched(curves, monkeypatch):
    """search_batch hands each light curve's statistics to its pool as soon as
    search_many has them: the second light curve's results object is made while
    its chunk's third light curve is searched, not after the chunk (chunks of
    two ramp up as 1, 2)."""
    import threading

    from backends import statistics

    made = threading.Event()
    real = statistics.tls_results

    def tls_results(plan, stats, lean=False):
        out = real(plan, stats, lean)
        if plan.lc.size == curves[1][0].size:
            made.set()
        return out

    class Waiting(backends.get_backend("cpu").__class__):
        def search(self, plan, periods, progress=None):
            if plan.lc.size == curves[2][0].size:
                assert made.wait(timeout=60), "the second light curve's results waited for the chunk"
            return super().search(plan, periods, progress)

    monkeypatch.setattr(statistics, "tls_results", tls_results)
    out = search_batch(curves, backend=Waiting(), chunk_size=2, **OPTIONS)
    assert [o.meta["id"] for o in out] == [0, 1, 2]
    assert [o.meta["batch"]["light_curves"] for o in out] == [1, 2, 2]


def test_batch_gives_what_search_gives(curves):
    out = search_batch(curves, backend="cpu", chunk_size=2, workers=2, **OPTIONS)
    for (t, y, dy), got in zip(curves, out):
        ref = backends.search(t, y, dy, backend="cpu", **OPTIONS)
        for key in ("period", "T0", "duration", "depth", "SDE", "snr", "FAP"):
            assert got[key] == ref[key], key
        np.testing.assert_array_equal(got.chi2, ref.chi2)
        np.testing.assert_array_equal(got.power, ref.power)
        assert got.meta["backend"] == "cpu" and got.meta["batch"]["light_curves"] in (1, 2)
    assert out[0].meta["batch"]["light_curves"] == 1  # chunks of two ramp up as 1, 2


def test_batch_chunks_ramp_up_to_chunk_size(curves):
    """The device starts after one light curve's plan: chunks of 1, 2, 4, ...
    up to ``chunk_size``, then ``chunk_size`` until the light curves run out."""
    sizes = []

    class Counting(backends.get_backend("cpu").__class__):
        def search_many(self, jobs, progress=None, found=None):
            sizes.append(len(jobs))
            return super().search_many(jobs, progress, found)

    many = [curves[k % 3] for k in range(12)]
    out = search_batch(many, backend=Counting(), chunk_size=3, period_min=3.0, period_max=3.2)
    assert sizes == [1, 2, 3, 3, 3] and len(out) == 12 and not any(isinstance(o, BatchError) for o in out)


class Refusing(backends.get_backend("cpu").__class__):
    """cpu, refusing light curves of over 700 points; search_many can be made to fail."""

    fail_many = False

    def refuses(self, plan):
        return "too big for this test" if plan.lc.size > 700 else None

    def search_many(self, jobs, progress=None, found=None):
        if self.fail_many:
            raise MemoryError("a pack did not fit")
        return super().search_many(jobs, progress, found)


def test_refused_and_failed_curves_are_their_own_errors(curves):
    backend = Refusing()
    out = search_batch(curves, backend=backend, **OPTIONS)  # 768, 624, 864 points
    assert [type(o).__name__ for o in out] == ["BatchError", "transitleastsquaresresults", "BatchError"]
    assert out[0].error == "InputTooLarge" and "too big" in out[0].message
    backend.fail_many = True  # each light curve alone: same results
    again = search_batch(curves[1:2], backend=backend, **OPTIONS)
    assert again[0].SDE == out[1].SDE


def test_a_search_many_failing_after_handing_one_over_still_gives_every_curve(curves):
    """search_many hands over light curve 0, then fails: each light curve is
    searched alone, and every outcome is what an unbroken batch gives."""

    class HalfFailing(backends.get_backend("cpu").__class__):
        def search_many(self, jobs, progress=None, found=None):
            found(0, self.search(*jobs[0]))
            raise MemoryError("a launch failed after the first light curve")

    out = search_batch(curves, backend=HalfFailing(), **OPTIONS)
    ref = search_batch(curves, backend="cpu", **OPTIONS)
    assert [o.SDE for o in out] == [r.SDE for r in ref] and [o.meta["id"] for o in out] == [0, 1, 2]


def test_a_failing_results_step_is_that_curves_error(curves, monkeypatch):
    from backends import statistics

    real = statistics.detection_statistics

    def fails_on_first(model, *args):
        return 1 / 0 if model.t.size == curves[0][0].size else real(model, *args)

    monkeypatch.setattr(statistics, "detection_statistics", fails_on_first)
    out = search_batch(curves[:2], backend="cpu", **OPTIONS)
    assert isinstance(out[0], BatchError) and out[0].error == "ZeroDivisionError"
    assert not isinstance(out[1], BatchError) and out[1].meta["id"] == 1


# ---- simple's packed path on a stand-in driver: layout, streams, scatter, grouping --------------

@pytest.fixture()
def fake_simple(monkeypatch):
    """A SimpleBackend whose kernel reads the pack from fake device memory:
    gain = period, index = lo, depth = first time of the block's light curve."""
    import contextlib

    driver = fake_pycuda(monkeypatch, FakeDriver())
    monkeypatch.setattr(simple, "LAUNCH_MACS", 3e8)  # more launches than the two streams
    backend = simple.SimpleBackend()
    launches = []

    def kernel(block, pack, dev_in, dev_out, stream):
        launches.append((block, pack.blocks))
        blocks = driver.at(dev_in + pack.offsets["blocks"], packing.BLOCK, pack.blocks)
        curves = driver.at(dev_in + pack.offsets["curves"], packing.CURVE, len(pack.sections["curves"]))
        t = driver.at(dev_in + pack.offsets["t"], np.float64, curves["n"].sum())
        driver.at(dev_out + pack.out_offsets["gain"], np.float64, pack.blocks)[:] = blocks["period"]
        driver.at(dev_out + pack.out_offsets["index"], np.int32, pack.blocks)[:] = blocks["lo"]
        driver.at(dev_out + pack.out_offsets["depth"], np.float64, pack.blocks)[:] = \
            t[curves["start"][blocks["curve"]]]

    monkeypatch.setattr(backend, "context", contextlib.nullcontext)
    monkeypatch.setattr(backend, "refuses", lambda plan: None)
    monkeypatch.setattr(backend, "_launch", kernel)
    backend.launches, backend.driver = launches, driver
    return backend


def test_packed_path_returns_each_curves_own_results(fake_simple, plans):
    small = backends.make_plan(*box_light_curve(days=6.0, seed=7), period_min=1.0, period_max=2.0)
    jobs = [plans[0], small, plans[1], plans[2], plans[0]]  # 768, 288, 624, 864, 768 points
    seen, found = [], {}
    out = fake_simple.search_many(jobs, progress=seen.append,
                                  found=lambda k, stats: found.setdefault(k, (stats, len(fake_simple.launches))))
    assert sorted(found) == list(range(len(jobs))) and all(found[k][0] is out[k] for k in found)
    assert found[0][1] < len(fake_simple.launches)  # handed over before the last launch
    for (plan, periods), stats in zip(jobs, out):
        lo, _ = plan.width_windows(periods)
        np.testing.assert_array_equal(stats.chi2, plan.lc.chi2_flat - periods)
        np.testing.assert_array_equal(stats.rows, plan.templates.rows[lo])
        assert (stats.depths == plan.lc.t[0]).all()
    assert {b for b, _ in fake_simple.launches} == {32, 128}  # one block size per launch
    assert len(fake_simple.launches) > 2 and sum(seen) == sum(p.size for _, p in jobs)
    assert {"duration_grid", "pack", "upload", "chi2_scan", "download", "results"} <= set(fake_simple.timings)
    one = fake_simple.search(*plans[1])  # a pack of one: the same path
    np.testing.assert_array_equal(one.chi2, out[2].chi2)


def test_packed_path_waits_for_the_device_after_an_error(fake_simple, plans, monkeypatch):
    synced = []
    monkeypatch.setattr(fake_simple.driver.Stream, "synchronize", lambda self: synced.append(self))

    def broken(*args):
        raise RuntimeError("launch failed")

    monkeypatch.setattr(fake_simple, "_launch", broken)
    with pytest.raises(RuntimeError, match="launch failed"):
        fake_simple.search_many(plans)
    assert len(synced) == 2  # both streams, before their buffers could go


def test_simple_gatekeeper_names_the_curve(plans, monkeypatch):
    backend = simple.SimpleBackend()
    monkeypatch.setattr(backend, "refuses", lambda plan: "too big" if plan is plans[1][0] else None)
    with pytest.raises(InputTooLarge, match="light curve 1: too big"):
        backend.search_many(plans)
    assert not backend.timings  # refused before anything ran



def test_auto_batch_chooses_for_the_first_light_curves_size(monkeypatch):
    asked = []
    real = backends.registry.resolve

    def resolve(name="auto", plan=None, ndata=None):
        asked.append((name, ndata))
        return real(name, plan, ndata)

    monkeypatch.setattr(backends.registry, "resolve", resolve)
    curves = [box_light_curve(days=d, seed=k) for k, d in enumerate((10.0, 12.0, 14.0))]
    outcomes = backends.search_batch(curves, backend="auto", period_min=2.0, period_max=3.0)
    assert ("auto", 480) in asked and ("auto", 576) not in asked  # the first of 480, 576 and 672 points
    assert all(r.meta["requested_backend"] == "auto" for r in outcomes)
