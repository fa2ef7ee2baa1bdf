"""``backends.packing``: the byte layout of a packed launch, read back with
numpy as the kernel reads it (no GPU)."""

import numpy as np
import pytest
from conftest import box_light_curve

import backends
from backends import packing
from backends.implementations.simple import packed_curve


@pytest.fixture(scope="module")
def jobs():
    """Three light curves of different lengths and grids (one searched twice)."""
    out = []
    for days, cadence, seed in ((16.0, 30.0, 0), (9.0, 20.0, 1), (12.0, 45.0, 2)):
        plan, periods = backends.make_plan(*box_light_curve(days=days, cadence_min=cadence, seed=seed),
                                           period_min=2.0, period_max=4.0)
        lo, hi = plan.width_windows(periods)
        out.append(packing.Job(packed_curve(plan), periods, lo, hi))
    return out + [out[0]]


def section(buffer, pack, name):
    dtype = {"curves": packing.CURVE, "blocks": packing.BLOCK, **packing.DTYPES}[name]
    return np.frombuffer(buffer, dtype, pack.sections[name].size, pack.offsets[name])


def written(pack):
    buffer = np.full(pack.nbytes + 64, 0xAB, np.uint8)
    pack.write(buffer)
    return buffer


def test_structs_match_the_kernel():
    assert (packing.CURVE.itemsize, packing.BLOCK.itemsize) == (40, 24)  # simple.cu static_assert


def test_layout_aligns_every_section():
    offsets, total = packing.layout([("a", 3), ("b", 16), ("c", 0), ("d", 17)])
    assert offsets == {"a": 0, "b": 16, "c": 32, "d": 32} and total == 64


def test_every_block_reads_its_own_light_curve(jobs):
    packs = list(packing.packs(jobs, max_macs=3e8, max_bytes=1 << 30))
    assert len(packs) > 2  # periods of one light curve span launches
    seen = [np.zeros(j.periods.size, int) for j in jobs]
    for pack in packs:
        buffer = written(pack)
        assert all(off % packing.ALIGN == 0 for off in pack.offsets.values())
        curves, blocks = section(buffer, pack, "curves"), section(buffer, pack, "blocks")
        arrays = {k: section(buffer, pack, k) for k in packing.DTYPES}
        for p in pack.pieces:
            job, c = jobs[p.job], curves[blocks["curve"][p.first]]
            mine = blocks[p.first:p.first + p.stop - p.start]
            assert (mine["curve"] == mine["curve"][0]).all()
            np.testing.assert_array_equal(mine["period"], job.periods[p.start:p.stop])
            np.testing.assert_array_equal(mine["lo"], job.lo[p.start:p.stop])
            np.testing.assert_array_equal(mine["hi"], job.hi[p.start:p.stop])
            seen[p.job][p.start:p.stop] += 1
            cv, n, wb, nw = job.curve, c["n"], c["wbase"], job.curve.widths.size
            assert (n, c["m"], c["cap"]) == (cv.t.size, cv.m, cv.cap)
            assert (c["depth_min"], c["signal_depth"]) == (cv.depth_min, cv.signal_depth)
            for k in ("t", "y", "w"):
                np.testing.assert_array_equal(arrays[k][c["start"]:c["start"] + n], getattr(cv, k))
            for k in ("widths", "strides", "overshoot", "taps"):
                np.testing.assert_array_equal(arrays[k][wb:wb + nw], getattr(cv, k))
            for wi in range(nw):  # each width's polyphase taps, at the global first tap
                first, count = arrays["toff"][wb + wi], cv.strides[wi] * cv.taps[wi]
                assert first % 2 == 0  # float4 = two (a, a*a) pairs
                np.testing.assert_array_equal(arrays["ta"][2 * first:2 * (first + count)],
                                              cv.ta[2 * cv.toff[wi]:2 * (cv.toff[wi] + count)])
        assert pack.shared == max(jobs[p.job].curve.shared for p in pack.pieces)
    assert all((s == 1).all() for s in seen)  # every period exactly once


def test_packs_bound_work_and_bytes(jobs):
    cost = [np.cumsum(j.curve.period_macs(j.lo, j.hi)) for j in jobs]
    max_macs = 3e8
    for pack in packing.packs(jobs, max_macs, max_bytes=1 << 30):
        macs = sum(cost[p.job][p.stop - 1] - (cost[p.job][p.start - 1] if p.start else 0)
                   for p in pack.pieces)
        assert macs <= max_macs or pack.blocks == 1
    max_bytes = jobs[0].curve.nbytes + 10 * packing.BLOCK.itemsize
    small = list(packing.packs(jobs, 1e18, max_bytes))
    assert all(p.nbytes <= max_bytes for p in small)
    assert max(p.blocks for p in small if p.pieces[0].job == 0) == 10
    assert sum(p.blocks for p in small) == sum(j.periods.size for j in jobs)
    tiny = list(packing.packs(jobs[:1], max_macs=1, max_bytes=1))  # one period each, never none
    assert [p.blocks for p in tiny] == [1] * jobs[0].periods.size


def test_one_pack_for_everything_small(jobs):
    (pack,) = packing.packs(jobs, 1e18, 1 << 30)
    assert [p.job for p in pack.pieces] == [0, 1, 2, 3]
    assert section(written(pack), pack, "curves").size == 4  # a job searched twice is two entries
    assert pack.nbytes == max(off + packing.ALIGN * -(-pack.sections[k].nbytes // packing.ALIGN)
                              for k, off in pack.offsets.items())


def test_scatter_puts_results_where_their_periods_are(jobs):
    results = packing.empty_results(jobs)
    for pack in packing.packs(jobs, 3e8, 1 << 30):
        blocks = pack.sections["blocks"]
        out = np.zeros(pack.out_nbytes, np.uint8)
        views = pack.outputs(out)
        views["gain"][:] = blocks["period"]
        views["index"][:] = blocks["lo"]
        views["depth"][:] = blocks["curve"]
        assert pack.scatter(out, results) == pack.blocks
    for job, r in zip(jobs, results):
        np.testing.assert_array_equal(r["gain"], job.periods)
        np.testing.assert_array_equal(r["index"], job.lo)


def test_a_job_without_periods_makes_no_pack(jobs):
    empty = packing.Job(jobs[0].curve, np.zeros(0), np.zeros(0, np.int32), np.zeros(0, np.int32))
    assert list(packing.packs([empty], 1e18, 1 << 30)) == []
    assert packing.empty_results([empty])[0]["gain"].size == 0
