"""``tensor``: its tables (banded float16 fragments of a and a^2, int8 ones
of a, room for every tile the kernel reads, the allowances' coefficients),
its refusals and kernels, and on a GPU the same chi2, rows and depths as
``cpu``, with equal weights and with weights that differ, its in-flight
re-checks and counters."""

import dataclasses

import numpy as np
import pytest

import backends
from backends.gpu import cuda_device_count
from backends.implementations.tensor import SHAPES, TensorBackend
from backends.tensor_tables import (INT8_TOP, TILE, U16, TensorTables, banded_fragments, fold_shape, halves,
                                    int8_fragments, int8_ksteps, int8_scale, int8_template, power_of_two_scale,
                                    shared_bytes)
from gpu_timing import case_plan
from tests.conftest import box_light_curve


@pytest.fixture(scope="module")
def k2():
    plan, periods = case_plan("k2")
    return plan, periods, TensorTables(plan.templates)


def unband(frag, ksteps, per_word=2):
    """A (16 x 8 per_word ksteps) back from its fragments: float16 pairs
    (m16n8k16) or int8 quads (m16n8k32) a word."""
    k = 8 * per_word
    frag = frag.reshape(ksteps, 32, 4)
    band = np.zeros((16, k * ksteps))
    lane = np.arange(32)
    for kk in range(ksteps):
        for reg, (dr, dc) in enumerate(((0, 0), (8, 0), (0, k // 2), (8, k // 2))):
            words = frag[kk, :, reg]
            values = (halves(words) if per_word == 2 else
                      [((words >> (8 * e)) & 0xFF).astype(np.uint8).view(np.int8) for e in range(4)])
            for e, value in enumerate(values):
                band[(lane >> 2) + dr, k * kk + per_word * (lane & 3) + dc + e] = value
    return band


@pytest.mark.parametrize("stride", [1, 2, 5])
def test_the_banded_fragments_hold_the_template_shifted_by_the_stride_per_row(stride):
    a = np.linspace(0.1, 1.0, 23) ** 2
    ksteps = -(-(a.size + 15 * stride) // 16)
    scale = power_of_two_scale(a)
    band = unband(banded_fragments(a, stride, ksteps, scale), ksteps) / scale
    for m in range(16):
        np.testing.assert_allclose(band[m, stride * m:stride * m + a.size], a, rtol=U16)
        assert not band[m, :stride * m].any() and not band[m, stride * m + a.size:].any()


@pytest.mark.parametrize("stride", [1, 2, 5])
def test_the_int8_fragments_hold_the_rounded_template_shifted_by_the_stride_per_row(stride):
    a = np.linspace(-0.3, 1.0, 23) ** 3
    q, s8 = int8_template(a)
    assert np.abs(q).max() == INT8_TOP and np.abs(a - s8 * q).max() <= s8 / 2
    ksteps = -(-(a.size + 15 * stride) // 32)
    band = unband(int8_fragments(q, stride, ksteps), ksteps, per_word=4)
    for m in range(16):
        np.testing.assert_array_equal(band[m, stride * m:stride * m + a.size], q)
        assert not band[m, :stride * m].any() and not band[m, stride * m + a.size:].any()


def test_the_int8_gates_allowance_covers_the_roundings_of_a_and_u(k2):
    """|AR - su sum q_a q| <= d8 sum_window |u| + su (1/2 + 2^-40) a1q for
    random folds and every width, and the allowance is not loose beyond what
    rounding costs (q = rint(u r8), su = 1 / r8)."""
    plan, _, tables = k2
    tp, f = plan.templates, tables.fields
    rng = np.random.default_rng(4)
    u = np.concatenate([rng.standard_normal(3000) * 1e-4, [7e-4, -9e-4]])
    r8 = int8_scale(u)
    q = np.rint(u * r8)
    assert np.abs(q).max() == INT8_TOP and int8_scale(np.zeros(3)) == 1.0
    worst = 0.0
    for wi in range(tp.widths.size):
        a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
        qa, s8 = int8_template(a)
        assert f["s8"][wi] == s8 and f["a1q"][wi] >= np.abs(s8 * qa).sum() and f["d8"][wi] >= np.abs(a - s8 * qa).max()
        for i in rng.integers(0, u.size - a.size, 20):
            window = u[i:i + a.size]
            ar, ar8 = float(window @ a), float(q[i:i + a.size] @ qa) * f["s8"][wi] / r8
            e8 = f["d8"][wi] * np.abs(window).sum() + f["a1q"][wi] * (0.5 + 2.0 ** -40) / r8
            worst = max(worst, abs(ar - ar8) / e8)
    assert 0.01 < worst < 1


def test_scales_put_the_largest_value_just_under_float16s_top_and_zero_is_left_alone():
    for top in (3e-6, 0.7, 1.0, 5e3):
        scaled = top * power_of_two_scale(np.array([top, -top / 2]))
        assert 2.0 ** 13 < scaled <= 2.0 ** 14
    assert power_of_two_scale(np.zeros(3)) == 1.0


@pytest.mark.parametrize("tiles_per_job", sorted({1, 2, 4, *(tiles for _, tiles in SHAPES.values())}))
def test_the_float16_and_int8_folds_have_room_for_every_tile_and_spare_tile_the_kernel_reads(k2, tiles_per_job):
    plan, _, tables = k2
    tp, f, n = plan.templates, tables.fields, plan.lc.size
    n_shifts, mp = fold_shape(tp, n, tiles_per_job)
    np.testing.assert_array_equal(n_shifts, pruning_shifts(plan))
    for wi in range(tp.widths.size):
        tiles = -(-int(n_shifts[wi]) // TILE)
        jobs = -(-tiles // tiles_per_job)
        end = jobs * tiles_per_job * TILE * tp.strides[wi]
        ksteps8 = int8_ksteps(f["ksteps"][wi])
        assert end + 16 * f["ksteps"][wi] <= mp and end + 32 * ksteps8 <= mp, wi  # halves; bytes
        assert 16 * f["ksteps"][wi] >= f["length"][wi] + 15 * tp.strides[wi]  # the band's last row fits
        assert 32 * ksteps8 >= f["length"][wi] + 15 * tp.strides[wi]
    assert mp % 32 == 0  # whole groups of tensor_screen.cu's ``placed`` (16 samples), ``placed8``'s chunk pairs
    m, fold = n + tp.maxwidth, shared_bytes(tp, n, mp)
    prefix = fold - 4 * mp  # cs (m + 1 doubles), then au (m + 1 floats), each rounded up to 4 entries
    assert prefix % 16 == 0 and prefix >= 12 * (m + 1) and prefix - 12 * (m + 1) < 48  # u16 aligned for ldmatrix
    sort = prefix + 2 * mp  # the sort's scratch: cs, au and u16 (fold_period's ``bytes``)
    assert sort - 4 * n >= 8 * m  # the sort's two 16-bit index arrays (last) lie past F, over cs's m doubles
    assert (sort - 4 * n - 8 * n) // 4 >= n // 2  # bucket counts between them and the keys (first)


def pruning_shifts(plan):
    """Shifts per width as the cpu backend scans them (its shift_end)."""
    from backends.implementations.cpu import shift_end

    tp, n = plan.templates, plan.lc.size
    return [(shift_end(n + tp.maxwidth, n, int(d), int(s)) - 1) // int(s) + 1 for d, s in zip(tp.widths, tp.strides)]


def test_the_allowance_covers_float16_rounding_accumulation_and_subnormals(k2):
    plan, _, tables = k2
    tp, f = plan.templates, tables.fields
    for wi in range(tp.widths.size):
        a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
        rel = (1 + U16) ** 2 - 1 + f["ksteps"][wi] * 8 * 2.0 ** -22  # 8x a truncation of 2^-22 per k-step
        assert f["e_coef"][wi] >= rel * np.abs(a).max()
        assert f["ksteps"][wi] * 8 * 2.0 ** -22 >= a.size * 2.0 ** -23  # no less than before the band grew
        assert f["a1"][wi] == pytest.approx(np.abs(a).sum()) and f["sum_a2"][wi] == pytest.approx(a @ a)


def test_weights_that_differ_take_the_kernel_with_a_second_product():
    varying = backends.make_plan(*box_light_curve())[0]
    equal = backends.make_plan(*box_light_curve(dy=None))[0]
    assert TensorBackend.kernel_for(varying) == ("tensor_search_w", True)
    assert TensorBackend.kernel_for(equal) == ("tensor_search", False)


def test_the_squares_fragments_hold_a_squared_and_share_the_offsets(k2):
    plan, _, tables = k2
    tp, f = plan.templates, tables.fields
    for wi in (0, tp.widths.size - 1):
        a = tp.a[tp.offsets[wi]:tp.offsets[wi + 1]]
        ksteps, stride = int(f["ksteps"][wi]), int(tp.strides[wi])
        span = slice(4 * tables.f_off[wi], 4 * tables.f_off[wi] + 128 * ksteps)
        band = unband(tables.frag2[span], ksteps) * f["inv_sa2"][wi]
        np.testing.assert_allclose(band[3, stride * 3:stride * 3 + a.size], a * a, rtol=U16)
    assert tables.frag2.size == tables.frag.size


def test_a_grid_of_more_widths_than_the_kernel_holds_is_refused(monkeypatch):
    from backends.implementations import tensor

    t, y, _ = box_light_curve(dy=None)
    plan = backends.make_plan(t, y)[0]
    monkeypatch.setattr(tensor, "MAX_WIDTHS", plan.templates.widths.size - 1)
    assert "template widths" in TensorBackend().refuses(plan)


@pytest.mark.parametrize("change", ["wider than the light curve", "template longer than its width"])
def test_a_grid_whose_fold_wraps_twice_is_refused(change):
    t, y, _ = box_light_curve(dy=None)
    plan = backends.make_plan(t, y)[0]
    tp = plan.templates
    tp = (dataclasses.replace(tp, maxwidth=plan.lc.size + 2) if change.startswith("wider")
          else dataclasses.replace(tp, widths=tp.widths - 1))
    assert "patched once" in TensorBackend().refuses(dataclasses.replace(plan, templates=tp))


def test_the_kernels_width_slots_and_counters_match_the_backends():
    from pathlib import Path

    from backends.implementations.tensor import COUNTERS, MAX_WIDTHS

    source = (Path(backends.__file__).parent / "cuda" / "tensor_screen.cu").read_text()
    assert f"#define MAXW {MAX_WIDTHS}" in source
    assert f"#define N_COUNTS {len(COUNTERS)}" in source


@pytest.mark.parametrize("dy", [None, "box"], ids=["equal weights", "weights that differ"])
def test_each_launch_passes_the_kernels_parameters_in_their_order_and_kinds(monkeypatch, dy):
    """The host's arguments against ``SEARCH_PARAMS`` in tensor_screen.cu
    (a pointer as an address, a double as float64, an int as int32): one
    out of place shifts every later parameter, which no CPU test would see."""
    import re
    from pathlib import Path

    source = (Path(backends.__file__).parent / "cuda" / "tensor_screen.cu").read_text()
    params = re.search(r"#define SEARCH_PARAMS(.*?)\n#define", source, re.S).group(1).replace("\\", "").split(",")
    kinds = [np.intp if "*" in p else np.float64 if p.split()[0] == "double" else np.int32 for p in params]
    got = []
    backend = fake_tensor(monkeypatch, [])
    monkeypatch.setattr(backend, "function", lambda kernel, block, shared: lambda *args, **launch: got.append(args))
    plan, periods = backends.make_plan(*box_light_curve(**({"dy": None} if dy is None else {})))
    backend.search(plan, periods[:3])
    assert [type(a) for a in got[0]] == kinds


def test_the_registry_names_it_and_auto_takes_it_where_the_h200s_table_ranks_it_first():
    """On an H200 (its measured table) ``auto`` puts tensor first for K2-size
    light curves and pruned for TESS-size ones, which tensor refuses; a GPU
    with no table of its family takes pruned (any light curve) before it."""
    from backends.variants import auto_order

    order = backends.registry.AUTO_ORDER
    assert backends.registry.backend_class("tensor") is TensorBackend
    assert TensorBackend.exact and TensorBackend.fuses_fold_sort
    assert order.index("pruned") < order.index("tensor")
    assert auto_order(order, gpu="NVIDIA H200", ndata=4320)[0] == "tensor"
    assert auto_order(order, gpu="NVIDIA H200", ndata=20000)[0] == "pruned"
    assert auto_order(order, gpu="NVIDIA A100-SXM4-80GB", ndata=4320)[0] == "pruned"


def test_each_kernel_folds_and_compiles_for_its_own_shape():
    """tensor_search and tensor_search_w differ in threads and tiles per job
    (SHAPES): a plan's fold padding follows its kernel's tiles, and two blocks
    per SM are asked only at tensor_search's threads."""
    backend = TensorBackend()
    pads = set()
    for case, kernel in (("k2", "tensor_search"), ("k2w", "tensor_search_w")):
        plan = case_plan(case)[0]
        threads, tiles = SHAPES[kernel]
        got, _, mp, *_ = backend.fold_of(plan)
        assert got == kernel and mp == fold_shape(plan.templates, plan.lc.size, tiles)[1]
        pads |= {fold_shape(plan.templates, plan.lc.size, t)[1] - mp for t in (2, 4)}
        assert backend.kernel_defines(threads)["MIN_BLOCKS"] == (2 if kernel == "tensor_search" else 1)
    assert len(pads) > 1  # the tiles per job change the padding: a kernel's own are what it gets


def test_debug_mode_compiles_its_checks_in_and_is_off_by_default():
    threads = SHAPES["tensor_search"][0]
    assert TensorBackend().kernel_defines(threads)["DEBUG"] == 0
    assert TensorBackend(debug=True).kernel_defines(threads)["DEBUG"] == 1


def test_its_fold_sort_stage_is_not_a_separate_one():
    with pytest.raises(NotImplementedError, match="folds each period inside its scan"):
        TensorBackend().fold_sort(None, np.array([1.0]))


gpu = pytest.mark.skipif(cuda_device_count() == 0 or backends.available_backends()["tensor"] is not None,
                         reason="needs a CUDA GPU and PyCUDA")


def assert_same_as_cpu(got, plan, periods):
    ref = backends.get_backend("cpu").search(plan, periods)
    np.testing.assert_allclose(got.chi2, ref.chi2, rtol=1e-10)
    np.testing.assert_array_equal(got.rows, ref.rows)
    np.testing.assert_allclose(got.depths, ref.depths, rtol=1e-12, atol=1e-15)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("case, every", [("k2", 97), ("k2", 1), ("k2w", 97)])
def test_the_k2_like_search_equals_cpu(case, every):
    """Equal weights (tensor_search) and weights that differ (tensor_search_w)."""
    plan, periods = case_plan(case)
    periods = periods[::every]
    backend = backends.get_backend("tensor")
    assert_same_as_cpu(backend.search(plan, periods), plan, periods)
    work = backend.work
    assert periods.size <= work["rechecked"] <= 20 * periods.size
    assert 0 < work["tiles_screened"] and work["exact_macs"] > 0
    lo, hi = plan.width_windows(periods)
    job_start = backend.fold_of(plan)[4]
    jobs = int((job_start[hi] - job_start[lo]).sum())
    if plan.lc.uniform_weight > 0:  # the int8 gate closes most jobs before their float16 products
        assert 0 < work["jobs_refined"] < jobs / 3
    else:  # tensor_search_w has none
        assert work["jobs_refined"] == 0


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("case", ["k2", "k2w"])
def test_debug_mode_finds_every_bound_holding_on_every_screened_and_gated_shift(case):
    plan, periods = case_plan(case)
    periods = periods[::499]
    backend = backends.registry.backend_class("tensor")(debug=True)
    assert_same_as_cpu(backend.search(plan, periods), plan, periods)
    assert backend.work["bound_violations"] == 0


@gpu
@pytest.mark.gpu
def test_debug_mode_raises_when_the_screen_loses_its_allowance(k2, monkeypatch):
    """With e_coef 0 (no allowance for float16's rounding of AR) screened
    shifts beat their upper bounds, and debug mode says so."""
    from backends import pruning

    plan, periods, _ = k2
    sections = TensorBackend.template_sections
    monkeypatch.setattr(TensorBackend, "template_sections", lambda self, tp: [
        (name, np.zeros_like(value) if name == "e_coef" else value) for name, value in sections(self, tp)])
    with pytest.raises(pruning.BoundViolation):
        TensorBackend(debug=True).search(plan, periods[::499])


@gpu
@pytest.mark.gpu
def test_debug_mode_raises_when_the_int8_gate_loses_its_allowance(k2, monkeypatch):
    """With d8 and a1q 0 (no allowance for the int8 roundings of a and u)
    the int8 gate closes jobs holding shifts whose gains beat the bound that
    closed them, and debug mode says so."""
    from backends import pruning

    plan, periods, _ = k2
    sections = TensorBackend.template_sections
    monkeypatch.setattr(TensorBackend, "template_sections", lambda self, tp: [
        (name, np.zeros_like(value) if name in ("d8", "a1q") else value) for name, value in sections(self, tp)])
    with pytest.raises(pruning.BoundViolation):
        TensorBackend(debug=True).search(plan, periods[::499])


@gpu
@pytest.mark.gpu
def test_debug_mode_raises_when_a_jobs_gate_skips_by_a_broken_bound(monkeypatch):
    """With weights that differ a job is gated first against A2's floor
    w_min sum a^2; a floor 1000 times too high skips jobs holding shifts whose
    gains beat the bound that skipped them, and debug mode says so."""
    from backends import pruning

    plan, periods = case_plan("k2w")
    defines = TensorBackend.kernel_defines
    monkeypatch.setattr(TensorBackend, "kernel_defines",
                        lambda self, block: {**defines(self, block), "A2_FLOOR": "1e3"})
    with pytest.raises(pruning.BoundViolation):
        TensorBackend(debug=True).search(plan, periods[::499])


@gpu
@pytest.mark.gpu
def test_lists_full_of_near_ties_are_rechecked_at_once_and_the_result_is_cpus():
    """Every box of a light curve offset by a constant is nearly as deep as
    every other: the warps' lists fill and are re-checked in flight (flushes)."""
    t, _, dy = box_light_curve(depth=0.0, seed=9)
    y = 1.0 - 1e-3 + 1e-7 * np.random.default_rng(1).standard_normal(t.size)
    plan, periods = backends.make_plan(t, y, dy)
    backend = backends.get_backend("tensor")
    assert_same_as_cpu(backend.search(plan, periods[:20]), plan, periods[:20])
    assert backend.work["flushes"] > 0


@gpu
@pytest.mark.gpu
def test_lists_full_before_the_lower_gain_rises_are_compacted_and_the_result_is_cpus(monkeypatch):
    """Near ties (every box about as deep as a constant offset) fill the
    warps' lists of 32 at once; a transit 20 % deeper than the offset raises
    the lower gain past them, so full lists are compacted (entries freed, the
    job screened again from the vote that did not fit), not only re-checked."""
    t, y, _ = box_light_curve(depth=2e-4, noise=1e-7, seed=9, dy=None)
    plan, periods = backends.make_plan(t, y - 1e-3)
    near = periods[np.argsort(np.abs(periods - 4.3))[:20]]  # the transit's period (box_light_curve's) and beside it
    defines = TensorBackend.kernel_defines
    monkeypatch.setattr(TensorBackend, "kernel_defines",
                        lambda self, block: {**defines(self, block), "CAP": block})  # 32 shifts a warp
    backend = TensorBackend()
    assert_same_as_cpu(backend.search(plan, near), plan, near)
    assert backend.work["compactions"] > 0


@gpu
@pytest.mark.gpu
def test_search_many_of_light_curves_of_growing_lengths_gives_each_cpus_stats():
    """Each queued behind the one before, their fold orders in memory that
    grows between them: every light curve's stats are still its own."""
    jobs = [backends.make_plan(*box_light_curve(days=days, seed=seed)) for days, seed in ((15, 1), (25, 2), (20, 3))]
    jobs = [(plan, periods[::7]) for plan, periods in jobs]
    got = TensorBackend().search_many(jobs)
    for stats, (plan, periods) in zip(got, jobs):
        assert_same_as_cpu(stats, plan, periods)


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dy", ["varying", None])
def test_periods_at_and_near_a_multiple_of_the_cadence_fold_in_cpus_order(dy):
    """0.75 d is 36 cadences: its phases crowd into 36 buckets of 53-54
    samples, which the bitonic network sorts (bucket_rank_n's fallback, on
    the 16-bit order itself); periods just off it fill buckets of 6 to 27
    samples at their largest, each sample ranked among its bucket's. Both
    kernels (weights that differ, and not)."""
    t, y, err = box_light_curve(days=40.0, seed=10, dy=dy)  # 30-min cadence, 1,920 points
    plan, _ = backends.make_plan(t, y, err, period_min=0.7, period_max=2.5)
    n = plan.lc.size
    periods = 0.75 * (1 + np.array([0.0, 2e-5, 5e-5, 1e-4, 2e-4]))
    largest = [np.bincount(np.minimum(((x - np.floor(x)) * n).astype(int), n - 1)).max()
               for x in (plan.lc.t * (1 / p) for p in periods)]
    assert largest[0] > 32 and any(4 < size <= 32 for size in largest[1:])  # crowded, and ranked buckets
    assert_same_as_cpu(backends.get_backend("tensor").search(plan, periods), plan, periods)


@gpu
@pytest.mark.gpu
def test_a_time_axis_near_3000_days_folds_without_losing_samples():
    t, y, _ = box_light_curve(epoch=3000.0, seed=2, dy=None)
    plan, periods = backends.make_plan(t, y)
    assert_same_as_cpu(backends.get_backend("tensor").search(plan, periods[:300]), plan, periods[:300])


def test_fold_shapes_are_formed_once_per_templates_object_while_light_curves_alternate(k2, small_plan, monkeypatch):
    from backends.implementations import tensor

    formed, shape = [], tensor.fold_shape
    monkeypatch.setattr(tensor, "fold_shape", lambda tp, n, tpj: formed.append(n) or shape(tp, n, tpj))
    backend, plan, other = TensorBackend(), k2[0], small_plan[0]
    for _ in range(3):
        first, _ = backend.fold_of(plan), backend.fold_of(other)
    assert formed == [plan.lc.size, other.lc.size] and backend.fold_of(plan) is first
    assert first[3] == shared_bytes(plan.templates, plan.lc.size, first[2])


def fake_tensor(monkeypatch, log):
    """A ``TensorBackend`` on a fake driver (``conftest.FakeDriver``, events
    tick 1 ms) whose launches append ("launch", kernel, periods) to ``log``,
    with a page-locked pool of its own (``tensor.PINNED``)."""
    from types import SimpleNamespace

    from conftest import FakeDriver, fake_pycuda

    from backends.implementations import device_pool, staged, tensor

    device = fake_pycuda(monkeypatch, FakeDriver())
    device.init = lambda: None
    device.Device = lambda k: SimpleNamespace(retain_primary_context=lambda: SimpleNamespace(
        push=lambda: None, pop=lambda: None))
    device.Context = SimpleNamespace(synchronize=lambda: log.append(("synchronize",)))
    monkeypatch.setattr(device_pool, "DevicePool", lambda: SimpleNamespace(allocate=device.mem_alloc))
    monkeypatch.setattr(tensor, "PINNED", staged.PinnedBuffers())
    backend = TensorBackend()
    monkeypatch.setattr(backend, "refuses", lambda plan: None)  # no device to ask
    monkeypatch.setattr(backend, "resident_blocks", lambda threads: 1 << 20)  # a block a period
    monkeypatch.setattr(backend, "function", lambda kernel, block, shared: lambda *args, **launch: log.append(
        ("launch", kernel, launch["grid"][0])))
    return backend


def test_a_scan_times_its_kernel_by_cuda_events_and_its_stats_own_their_arrays(monkeypatch, small_plan):
    """``chi2_scan.kernel``: the launch between two events on a fake driver
    (events tick 1 ms), a part of the stage (dotted), not a stage of its own.
    The results come back into a page-locked buffer that the next search
    reuses: the stats keep none of it."""
    from backends.implementations import tensor

    launched = []
    backend, (plan, periods) = fake_tensor(monkeypatch, launched), small_plan
    state = backend.upload(plan)
    lo, hi = plan.width_windows(periods)
    stats = backend.chi2_scan(state, None, periods, lo, hi)
    assert launched == [("launch", backend.kernel_for(plan)[0], periods.size)] and stats.chi2.size == periods.size
    assert dict(backend.timings) == {"chi2_scan.kernel": 0.001}
    before = [a.copy() for a in (stats.chi2, stats.rows, stats.depths)]
    (buffer,) = tensor.PINNED._free
    buffer[:] = 0x40  # the next search's results
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip((stats.chi2, stats.rows, stats.depths), before))


def test_blocks_take_periods_from_a_queue_each_with_a_scratch_of_its_own(monkeypatch):
    """Both kernels launch at most the blocks the GPU holds at once, each
    searching the queue's next period until none is left, with a fold
    scratch of its own: the patched folded flux (8 m bytes, m = n + the widest
    template), with weights that differ the folded weights after it (16 m)."""
    log, needs = [], []
    backend = fake_tensor(monkeypatch, log)
    monkeypatch.setattr(backend, "resident_blocks", lambda threads: 4)
    monkeypatch.setattr(backend, "scratch_memory", lambda nbytes: needs.append(nbytes) or np.intp(0))
    for options in ({"dy": None}, {}):  # equal weights, then weights that differ
        plan, periods = backends.make_plan(*box_light_curve(**options))
        backend.search(plan, periods[:6])
        backend.search(plan, periods[:3])
    m = plan.lc.size + plan.templates.maxwidth
    assert [entry[2] for entry in log if entry[0] == "launch"] == [4, 3, 4, 3]
    assert needs == [8 * 4 * m, 8 * 3 * m, 16 * 4 * m, 16 * 3 * m]


def test_resident_blocks_are_the_sms_threads_in_blocks_read_once(monkeypatch):
    """The queue's grid: the SMs times the blocks of ``threads`` an SM's
    threads allow (an H200: 132 x 2048), from attributes read once."""
    import contextlib
    from types import SimpleNamespace

    from conftest import fake_pycuda

    asked = []
    fake_pycuda(monkeypatch, SimpleNamespace(device_attribute=SimpleNamespace(
        MULTIPROCESSOR_COUNT="sms", MAX_THREADS_PER_MULTIPROCESSOR="threads")))
    backend = TensorBackend()
    monkeypatch.setattr(backend, "context", contextlib.nullcontext)
    monkeypatch.setattr(backend, "_device", lambda: SimpleNamespace(
        get_attribute=lambda name: asked.append(name) or {"sms": 132, "threads": 2048}[name]))
    assert [backend.resident_blocks(threads) for threads in (384, 512, 4096)] == [660, 528, 132]
    assert asked == ["sms", "threads"]


def test_fold_scratch_takes_memory_kept_across_searches_that_grows_only(monkeypatch):
    """A survey's light curves differ in length: their fold scratch (~150 MB
    a K2-like one while each period had its own) reuses one allocation,
    re-made only for a larger need, once the searches queued before have ended."""
    from types import SimpleNamespace

    from conftest import FakeDriver, fake_pycuda

    device = fake_pycuda(monkeypatch, FakeDriver())
    made, alloc = [], device.mem_alloc
    device.mem_alloc = lambda size: made.append(size) or alloc(size)
    device.Context = SimpleNamespace(synchronize=lambda: made.append("synchronize"))
    backend = TensorBackend()
    first = backend.scratch_memory(1000)
    assert [backend.scratch_memory(need) for need in (1200, 10, 1250)] == [first] * 3 and made == [1250]
    assert backend.scratch_memory(1300) != first and made == [1250, "synchronize", 1625]


def test_search_many_launches_each_light_curve_before_reading_the_one_before(monkeypatch, small_plan):
    """The host's work around a kernel overlaps the kernel before it; the
    results come in order, as ``search`` gives them, each handed to
    ``found`` and counted by ``progress`` as it is read; a job of more than
    one batch is searched alone in its turn."""
    log = []
    backend, (plan, periods) = fake_tensor(monkeypatch, log), small_plan
    monkeypatch.setattr(backend, "max_batch_periods", lambda plan: 6)
    jobs = [(plan, periods[:6]), (plan, periods[:5]), (plan, periods[:9]), (plan, periods[:3])]
    got = backend.search_many(jobs, progress=lambda n: log.append(("progress", n)),
                              found=lambda k, stats: log.append(("found", k, stats.chi2.size)))
    kernel = backend.kernel_for(plan)[0]
    assert [entry for entry in log if entry[0] != "synchronize"] == [
        ("launch", kernel, 6), ("launch", kernel, 5), ("progress", 6), ("found", 0, 6),
        ("progress", 5), ("found", 1, 5), ("launch", kernel, 3),  # job 2, alone, after job 3's launch
        ("launch", kernel, 6), ("launch", kernel, 3), ("progress", 9), ("found", 2, 9),
        ("progress", 3), ("found", 3, 3)]
    alone = [backend.search(plan, p) for p, in ((periods[:6],), (periods[:5],), (periods[:9],), (periods[:3],))]
    for a, b in zip(got, alone):
        for x, y in zip((a.chi2, a.rows, a.depths), (b.chi2, b.rows, b.depths)):
            np.testing.assert_array_equal(x, y)


def test_search_many_that_fails_waits_for_the_device_and_gives_every_buffer_back(monkeypatch, small_plan):
    """An error at a light curve (here its upload) leaves no copy in flight
    into a page-locked buffer lent again: the device is waited for first."""
    from backends.implementations import tensor

    log = []
    backend, (plan, periods) = fake_tensor(monkeypatch, log), small_plan
    upload = backend.upload
    monkeypatch.setattr(backend, "upload", lambda p: upload(p) if len(log) < 1 else 1 / 0)
    with pytest.raises(ZeroDivisionError) as failed:  # its traceback holds the frames: no help from gc
        backend.search_many([(plan, periods), (plan, periods)])
    assert log[-1] == ("synchronize",) and len(tensor.PINNED._free) == 1 and failed.traceback  # the first job's


def test_search_many_whose_results_fail_gives_back_the_buffers_of_that_job_and_the_next(monkeypatch, small_plan):
    """A job's results raising (a debug mode's bound violation) ends the run
    with the device waited for and both jobs' page-locked buffers given back:
    the next job was already queued behind it."""
    from backends import pruning
    from backends.implementations import tensor

    log = []
    backend, (plan, periods) = fake_tensor(monkeypatch, log), small_plan

    def violated(*args, **kwargs):
        raise pruning.BoundViolation("1 skipped shift(s) beat their bound")

    monkeypatch.setattr(pruning, "add_work", violated)
    with pytest.raises(pruning.BoundViolation) as failed:  # its traceback holds the frames: no help from gc
        backend.search_many([(plan, periods), (plan, periods), (plan, periods)])
    assert [entry[0] for entry in log] == ["launch", "launch", "synchronize"]
    assert len(tensor.PINNED._free) == 2 and failed.traceback
