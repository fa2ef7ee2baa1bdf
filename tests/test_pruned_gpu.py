"""GPU: the ``pruned`` backend meets TLS's exact contract against the ``cpu``
backend (itself held to TLS ``fused``): per-period chi2 within 1e-10, same rows
and depths, in both layouts (fold in shared memory, its K-piece bound linear
or constant; arrays in global memory),
across weights, epochs, batchings and light-curve sizes beyond shared memory;
its bounds hold on every skipped shift (debug mode) and its work counters are
deterministic."""

import numpy as np
import pytest

import backends
from backends import contract, pruning
from backends.gpu import cuda_device_count
from backends.protocol import InputTooLarge
from tests.conftest import box_light_curve

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(cuda_device_count() == 0, reason="no CUDA GPU on this machine"),
]

CASES = {
    "varying-dy": dict(),
    "constant-dy": dict(dy="constant", seed=4, depth=6e-4),
    "t~3000d": dict(epoch=3000.0, seed=2, dy=None),
    "odd-n": dict(days=20.77, seed=3),
    "noise-only": dict(depth=0.0, seed=5),
    "large-n": dict(days=40.0, cadence_min=2.0, seed=6, depth=1e-3),  # 28,800 points
}


def pruned(**kw):
    why = backends.available_backends()["pruned"]
    if why is not None:
        pytest.skip(f"pruned: {why}")
    return backends.registry.backend_class("pruned")(**kw)


# the layouts tested: the shared one with either K-piece bound (linear where its
# prefix sums fit, as in these light curves, or constant)
LAYOUTS = {"shared": dict(layout="shared"), "shared-constant": dict(layout="shared", fine_bound="constant"),
           "global": dict(layout="global")}


@pytest.fixture(params=sorted(LAYOUTS))
def layout(request):
    return request.param


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    plan, periods = backends.make_plan(*box_light_curve(**CASES[request.param]))
    if plan.lc.size > 20000:
        periods = periods[:: max(1, periods.size // 60)]
    cpu = backends.get_backend("cpu")
    return plan, periods, cpu.search(plan, periods), dict(cpu.work)


def assert_exact_stats(ours, ref):
    contract.assert_exact(ours, ref, "pruned vs cpu")
    np.testing.assert_array_equal(ours.rows, ref.rows)
    np.testing.assert_allclose(ours.depths, ref.depths, rtol=0, atol=1e-12)


def pruned_in(layout, plan, **kw):
    """A pruned backend in ``layout`` (``LAYOUTS``); skips a fold too large for shared memory."""
    options = LAYOUTS[layout]
    if options["layout"] == "shared" and not pruned().folds_in_scan(plan):
        pytest.skip("fold beyond shared memory (test_shared_layout_refuses_a_long_fold)")
    return pruned(**options, **kw)


def test_per_period_matches_cpu_with_bounds_checked(case, layout):
    plan, periods, ref, cpu_work = case
    gpu = pruned_in(layout, plan, debug=True)
    assert_exact_stats(gpu.search(plan, periods), ref)
    assert gpu.folds_in_scan(plan) == (layout != "global")
    assert gpu.period_line(plan) == (layout == "shared" and plan.lc.uniform_weight > 0)
    assert gpu.work["bound_violations"] == 0
    for name in ("shifts", "depth_pass", "seed_dots", "brute_force_macs"):  # the depth filter, the seeds: the same
        assert gpu.work[name] == cpu_work[name], name
    assert gpu.work["fine_pass"] < gpu.work["depth_pass"]


@pytest.mark.parametrize("layout", ["shared", "global"])
def test_linear_bound_keeps_cpus_survivors(case, layout):
    """With the cpu backend's stage thresholds, each layout's linear K-piece
    bound (the shared one's: uniform weights) is the cpu's: the same shifts
    evaluated exactly."""
    plan, periods, ref, cpu_work = case
    gpu = pruned_in(layout, plan, debug=True, prune_min=pruning.PRUNE_MIN_LENGTH,
                    fine_min=pruning.FINE_MIN_LENGTH)
    if layout == "shared" and not plan.lc.uniform_weight:
        pytest.skip("weights that differ: constant pieces")
    assert gpu.period_line(plan) == (layout == "shared")
    assert_exact_stats(gpu.search(plan, periods), ref)
    for name in ("shifts", "depth_pass", "fine_pass", "seed_dots", "bound_violations"):
        assert gpu.work[name] == cpu_work[name], name


@pytest.mark.parametrize("layout, dy", [("shared", "constant"), ("global", "varying")])
def test_boxes_below_the_coarse_depth_skip_the_one_piece_bound_as_on_the_cpu(layout, dy):
    """With transit_depth_min 0, noise makes boxes shallower than
    pruning.COARSE_DEPTH (1 ppm) pass the depth filter (here over a third of the
    shifts the one-piece bound would prune). Its k (one fma) is certified only
    from that depth on, so both backends queue those boxes unbounded: the same
    shifts reach the K-piece bound. (The layouts whose one-piece bound is the
    cpu's: the shared one's A2 floor with weights that differ is a constant, the
    global one's window sum of u with uniform weights comes from the flux.)"""
    plan, periods = backends.make_plan(*box_light_curve(depth=0.0, noise=2e-5, seed=9, dy=dy), transit_depth_min=0.0)
    periods = periods[::4]
    cpu = backends.get_backend("cpu")
    ref = cpu.search(plan, periods)
    gpu = pruned_in(layout, plan, debug=True, prune_min=pruning.PRUNE_MIN_LENGTH, fine_min=pruning.FINE_MIN_LENGTH)
    assert_exact_stats(gpu.search(plan, periods), ref)
    for name in ("depth_pass", "coarse_pass", "fine_pass", "bound_violations"):
        assert gpu.work[name] == cpu.work[name], name


@pytest.mark.parametrize("scan_jobs", [1, 3, 8])
def test_widths_interleaved_per_block_change_neither_fits_nor_work(case, scan_jobs):
    """The global layout's scan blocks of 1, 3 or 8 widths of a period (their
    shifts interleaved; exact tiles only for one): cpu's fits, and its counts
    at its stage thresholds."""
    plan, periods, ref, cpu_work = case
    gpu = pruned(layout="global", debug=True, scan_jobs=scan_jobs, prune_min=pruning.PRUNE_MIN_LENGTH,
                 fine_min=pruning.FINE_MIN_LENGTH)
    assert_exact_stats(gpu.search(plan, periods), ref)
    assert gpu.work["bound_violations"] == 0
    for name in ("shifts", "depth_pass", "fine_pass", "seed_dots", "brute_force_macs"):
        assert gpu.work[name] == cpu_work[name], name


@pytest.mark.parametrize("prune_min, fine_min", [(1, 1), (8, 64), (10**6, 10**6)])
def test_stage_thresholds_move_work_not_results(prune_min, fine_min, layout):
    """Bounds on every template (1), on none (10**6) or in between: the same
    fits, no bound violated, the exact work where the thresholds put it."""
    plan, periods = backends.make_plan(*box_light_curve(**CASES["constant-dy"]))
    periods = periods[::3]
    ref = backends.get_backend("cpu").search(plan, periods)
    gpu = pruned_in(layout, plan, debug=True, prune_min=prune_min, fine_min=fine_min)
    assert_exact_stats(gpu.search(plan, periods), ref)
    work = gpu.work
    assert work["bound_violations"] == 0
    if prune_min == 10**6:  # every depth-passing shift evaluated exactly, nothing queued
        assert work["coarse_pass"] == work["fine_pass"] == work["depth_pass"]
    else:
        assert work["fine_pass"] < work["depth_pass"]


def test_counters_deterministic_and_batching_invariant(case, layout, monkeypatch):
    plan, periods, ref, _ = case
    runs = []
    for batch in (None, 7):
        gpu = pruned_in(layout, plan)
        if batch:
            monkeypatch.setattr(gpu, "max_batch_periods", lambda plan: batch)
        assert_exact_stats(gpu.search(plan, periods), ref)
        runs.append(pruning.work_summary(gpu.work))
    assert runs[0] == runs[1]


def test_seeds_from_shared_memory_are_the_seeds_from_global_memory(case, monkeypatch):
    """pruned_seed with the cumulative flux copied to shared memory and read
    from global memory gives the same thresholds: the same fits and the same work."""
    from backends.implementations import pruned as module

    plan, periods, ref, cpu_work = case
    runs = []
    for limit in (module.SEED_CS_BYTES, 0):
        monkeypatch.setattr(module, "SEED_CS_BYTES", limit)
        gpu = pruned(layout="global")
        assert_exact_stats(gpu.search(plan, periods), ref)
        runs.append(dict(gpu.work))
        used = gpu._seed_shared(plan.lc.size + plan.templates.maxwidth, gpu._block(plan.lc.size))
        assert (used > 0) == (limit > 0 and plan.lc.size < 20000)  # large-n: 28,800 points do not fit
    assert runs[0] == runs[1] and runs[0]["seed_dots"] == cpu_work["seed_dots"]


def test_queued_batches_give_one_batch_results_progress_and_device_stage_times(layout, monkeypatch):
    """Batches of 7 periods queued two at a time (their scratch reused from the
    pool in stream order) give one batch's fits bit for bit; progress counts
    every period once; the event clock's stages are all timed."""
    plan, periods = backends.make_plan(*box_light_curve(seed=11))
    periods = periods[::4]
    whole = pruned_in(layout, plan).search(plan, periods)
    gpu = pruned_in(layout, plan)
    monkeypatch.setattr(gpu, "max_batch_periods", lambda plan: 7)
    seen = []
    batched = gpu.search(plan, periods, progress=seen.append)
    for name in ("chi2", "rows", "depths"):
        np.testing.assert_array_equal(getattr(batched, name), getattr(whole, name))
    assert sum(seen) == periods.size and max(seen) == 7 and len(seen) == -(-periods.size // 7)
    stages = {"chi2_scan"} | ({"fold_sort", "chi2_scan.prefix", "chi2_scan.seed", "chi2_scan.cascade",
                               "chi2_scan.reduce"} if layout == "global" else set())
    assert {name for name, seconds in gpu.timings.items() if seconds > 0} >= stages | {"upload"}


def test_memory_pool_keeps_its_blocks_across_shapes_only_while_small(case, layout, monkeypatch):
    from backends.implementations import device_pool

    plan, periods, _, _ = case
    other = backends.make_plan(*box_light_curve(days=21.3, seed=14))[0]
    gpu = pruned_in(layout, plan)
    gpu.search(plan, periods[:50])
    held = gpu._pool.held_blocks
    gpu.search(plan, periods[:50])
    assert gpu._pool.held_blocks == held > 0  # the same shape reuses its blocks
    gpu.search(other, periods[:50])
    assert gpu._pool.held_blocks >= held  # another shape, a small pool: kept
    monkeypatch.setattr(device_pool, "POOL_KEEP_BYTES", 0)
    gpu.search(plan, periods[:50])  # another shape, a pool above the limit: given back first
    fresh = pruned_in(layout, plan)
    fresh.search(plan, periods[:50])
    assert gpu._pool.held_blocks == fresh._pool.held_blocks


LET_GO_ELSEWHERE = """
import threading
from backends.implementations.pruned import PrunedBackend
from pycuda.tools import DeviceMemoryPool
gpu = PrunedBackend()
with gpu.context():
    if {raw}:
        pool = DeviceMemoryPool()
    else:
        gpu._allocate(1)
        pool = gpu._pool
    pool.free_held()  # it holds no block: the next one back makes it take the current context
    box = [pool.allocate(1 << 20)]
elsewhere = threading.Thread(target=box.clear)  # the block's last reference goes where no context is current
elsewhere.start()
elsewhere.join()
print(getattr(pool, "orphans", None), flush=True)
if {gone}:
    del pool, gpu  # with no context current
else:
    with gpu.context():
        pool.allocate(1 << 20)
        print(getattr(pool, "orphans", None), flush=True)
"""


@pytest.mark.parametrize("raw, gone, printed", [(True, False, None), (False, False, ["1", "0"]),
                                                (False, True, ["1"])])
def test_a_block_let_go_where_no_context_is_current_waits_for_one(raw, gone, printed):
    """PyCUDA's own pool aborts the process (the hazard, shown in a child
    process); ``DevicePool`` keeps the block until its next allocation, or
    frees it in its context as the pool goes."""
    import subprocess
    import sys

    pruned()
    done = subprocess.run([sys.executable, "-c", LET_GO_ELSEWHERE.format(raw=raw, gone=gone)], capture_output=True,
                          text=True, timeout=120)
    if raw:
        assert done.returncode != 0 and "explicit_context_dependent" in done.stderr
    else:
        assert (done.returncode, done.stdout.split()) == (0, printed), done.stderr


KEPT_IN_A_THREAD = """
import threading
import backends
from tests.conftest import box_light_curve
lc = box_light_curve()
worker = threading.Thread(target=lambda: backends.search(*lc, backend="pruned", period_max=5.0))
worker.start()
worker.join()  # the thread's kept instance, its pool and tables go as the thread ends
print(backends.search(*lc, backend="pruned", period_max=5.0).period > 0, flush=True)  # kept until exit
"""


def test_instances_kept_per_thread_go_cleanly_with_their_thread_and_at_exit():
    """A thread's kept instance (``registry.kept_instance``) goes with the thread,
    no context current there, and the main thread's at the interpreter's exit:
    no abort, no PyCUDA warning of memory it could not free (child process)."""
    import os
    import subprocess
    import sys

    pruned()
    done = subprocess.run([sys.executable, "-c", KEPT_IN_A_THREAD], capture_output=True, text=True, timeout=300,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert (done.returncode, done.stdout.split()) == (0, ["True"]), done.stderr
    assert "PyCUDA WARNING" not in done.stderr, done.stderr


def test_templates_stay_on_the_device_for_the_same_templates(case, monkeypatch):
    plan, _, _, _ = case
    gpu = pruned()
    first = gpu.upload(plan)
    again = gpu.upload(plan)
    assert again.base.tables is first.base.tables
    other = backends.make_plan(*box_light_curve(days=21.3, seed=14))[0]
    assert other.templates is not plan.templates
    assert gpu.upload(other).base.tables is not first.base.tables
    pieces = plan.templates.pieces
    assert gpu.upload(plan).base.tables is first.base.tables  # kept across the other
    latest = gpu.upload(plan).base.tables
    monkeypatch.setitem(plan.templates.__dict__, "pieces", pruning.PieceTables(**pieces.__dict__))
    assert gpu.upload(plan).base.tables is not latest  # new pieces: new tables


def test_debug_mode_catches_a_broken_bound(layout, monkeypatch):
    """Bounds made too small (rho and piece means zeroed) must be caught."""
    plan, periods = backends.make_plan(*box_light_curve(seed=10))
    pieces = plan.templates.pieces
    broken = pruning.PieceTables(**{**pieces.__dict__, "rho": pieces.rho * 0.0,
                                    "c": pieces.c * 0.0, "mean": pieces.mean * 0.0})
    monkeypatch.setitem(plan.templates.__dict__, "pieces", broken)
    with pytest.raises(pruning.BoundViolation):
        pruned_in(layout, plan, debug=True).search(plan, periods[:100])


def test_debug_mode_catches_a_broken_constant_a2_floor(layout, monkeypatch):
    """A least weight made too large (weights that differ) must be caught in
    every layout: pruned_scan's one-piece bound tests the constant floor first,
    pruned_period's bounds take it alone, and every K-piece bound takes it."""
    plan, periods = backends.make_plan(*box_light_curve(seed=10))
    assert not plan.lc.uniform_weight
    monkeypatch.setitem(plan.lc.__dict__, "least_weight", 3.0 * plan.lc.w.max())
    with pytest.raises(pruning.BoundViolation):
        pruned_in(layout, plan, debug=True).search(plan, periods[:100])


def test_flat_fallback_when_nothing_passes_depth_filter(layout):
    t, y, dy = box_light_curve(depth=0.0, seed=9)
    plan, periods = backends.make_plan(t, 1.0 + np.abs(y - 1.0), dy)
    stats = pruned_in(layout, plan).search(plan, periods[:80])
    np.testing.assert_array_equal(stats.chi2, plan.lc.chi2_flat)
    assert not stats.rows.any() and not stats.depths.any()


@pytest.mark.parametrize("block", [32, 256])
def test_block_sizes_agree(block):
    plan, periods = backends.make_plan(*box_light_curve(seed=11))
    periods = periods[::5]
    ref = backends.get_backend("cpu").search(plan, periods)
    assert_exact_stats(pruned(block_size=block, layout="global").search(plan, periods), ref)


def test_fold_with_fewer_buckets_than_samples_is_the_same(monkeypatch):
    """pruned_fold's bucket counts live in shared memory: a long light curve
    gets fewer buckets than samples (large-n: 24,576 for 28,800), the same
    stable order with any number of them, its order sorted in global or in
    shared memory (FOLD_ORDER_BYTES)."""
    from backends.implementations import pruned as module

    plan, periods = backends.make_plan(*box_light_curve(**CASES["large-n"]))
    periods = periods[::50]
    n, folds = plan.lc.size, []
    assert not module.fold_buckets(n)[1] and module.fold_buckets(n // 2)[1]  # the default's reach
    for buckets, order_bytes in ((module.FOLD_BUCKETS, 0), (512, 0), (n, 0), (module.FOLD_BUCKETS, 220 << 10),
                                 (n // 4, 5 * n)):
        monkeypatch.setattr(module, "FOLD_BUCKETS", buckets)
        monkeypatch.setattr(module, "FOLD_ORDER_BYTES", order_bytes)
        assert module.fold_buckets(n) == (buckets, order_bytes > 0)
        gpu = pruned(layout="global")
        with gpu.context():  # the pooled arrays are read in the device's context
            folds.append(gpu.fold_sort(gpu.upload(plan), periods).read(["order"])["order"])
    for other in folds[1:]:
        np.testing.assert_array_equal(folds[0], other)


@pytest.mark.parametrize("order_bytes", [0, 110 << 10])
@pytest.mark.parametrize("buckets", [None, 512])
def test_fold_ranks_large_buckets_in_phase_and_index_order(buckets, order_bytes, monkeypatch):
    """Periods near a multiple of the cadence fill buckets of 5 to 54 entries
    (some with tied phases), which a warp ranks instead of one thread's
    insertion sort (bucket_sort.cuh's SMALL_BUCKET); the fold's order is still
    (phase, index), as numpy's lexsort gives it, sorted in global or shared memory."""
    from backends.implementations import pruned as module

    monkeypatch.setattr(module, "FOLD_ORDER_BYTES", order_bytes)

    t, y, dy = box_light_curve(days=40.0, seed=10)  # 30-min cadence, 1,920 points
    plan, _ = backends.make_plan(t, y, dy, period_min=0.7, period_max=2.5)
    n = plan.lc.size
    nb = buckets or n
    monkeypatch.setattr(module, "FOLD_BUCKETS", nb)
    periods = 0.75 * (1 + np.array([0.0, 2e-5, 5e-5, 1e-4, 2e-4]))
    phases = [x - np.floor(x) for x in (plan.lc.t * (1 / p) for p in periods)]  # fold_phase's rounding
    largest = [np.bincount(np.minimum((ph * nb).astype(int), nb - 1)).max() for ph in phases]
    crowd = 32 * -(-n // nb)
    assert any(4 < size <= crowd for size in largest)  # ranked by a warp, not the crowded fallback
    gpu = pruned(layout="global")
    with gpu.context():  # the pooled arrays are read in the device's context
        orders = gpu.fold_sort(gpu.upload(plan), periods).read(["order"])["order"].reshape(len(periods), n)
    for row, ph in zip(orders, phases):
        np.testing.assert_array_equal(row, np.lexsort((np.arange(n), ph)))


def test_auto_layout_folds_in_shared_memory_when_it_fits():
    small = backends.make_plan(*box_light_curve(seed=13))[0]
    large = backends.make_plan(*box_light_curve(**CASES["large-n"]))[0]
    for plan, shared in ((small, True), (large, False)):
        assert pruned().upload(plan).shared == pruned().folds_in_scan(plan) == shared


def test_long_fold_takes_global_layout_without_compiling_the_period_kernel(monkeypatch):
    large = backends.make_plan(*box_light_curve(**CASES["large-n"]))[0]
    gpu = pruned()
    monkeypatch.setattr(gpu, "shared_limit", lambda *a: pytest.fail("pruned_period compiled for a long fold"))
    assert not gpu.folds_in_scan(large)


def test_shared_layout_refuses_a_long_fold():
    plan = backends.make_plan(*box_light_curve(**CASES["large-n"]))[0]
    with pytest.raises(InputTooLarge, match="shared memory"):
        pruned(layout="shared").upload(plan)


def test_power_through_tls_meets_exact_contract():
    from backends.tls_power import power

    t, y, dy = box_light_curve(seed=12)
    fused = power(t, y, dy, backend="fused", use_threads=4)
    ours = power(t, y, dy, backend="bench-pruned", use_threads=4)
    contract.assert_exact(ours, fused, "bench-pruned vs fused")
