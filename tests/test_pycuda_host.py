"""Host-side logic of the PyCUDA backends and the kernel cache (no GPU needed)."""

import os
import shutil
import threading
import time

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import FakeDriver, fake_pycuda

import backends
from backends import kernel_cache
from backends.implementations import basic, simple, thrust
from backends.implementations import pycuda_base as base
from backends.kernel_cache import KernelCache


def fake_driver(monkeypatch, **attributes) -> SimpleNamespace:
    """``pycuda.driver``, for this test, a namespace of ``attributes``."""
    return fake_pycuda(monkeypatch, SimpleNamespace(**attributes))


def test_block_size_rule():
    assert [base.block_size_for(n) for n in (100, 499, 500, 4320, 19000, 100000)] == [
        32, 32, 128, 256, 256, 256]
    assert all(base.block_size_for(n) in base.BLOCK_SIZES for n in range(1, 50000, 997))


def test_next_pow2():
    assert [basic.next_pow2(n) for n in (1, 2, 3, 4320, 8192, 8193)] == [1, 2, 4, 8192, 8192, 16384]


def test_simple_shared_bytes_counts_csum_copies_and_order():
    # 4320 points, strides 1..5: skewed csum, two copies sized for stride 5, int order
    m = 4320 + 518
    assert base.phase_capacity(m, [1, 2, 5]) == base.skewed(5 * base.phase_length(m, 5)) == 5580
    assert simple.simple_shared_bytes(4320, 518, [1, 2, 5]) == 8 * (base.skewed(m) + 1) + 8 * 5580 + 4 * 4320
    # the copies also hold the n float64 sort keys
    assert all(8 * base.phase_capacity(n + 2, [1]) >= 8 * n for n in (1, 7, 1000, 4320))


@pytest.mark.parametrize("stride", [1, 2, 3, 5])
def test_phase_templates_reproduce_the_direct_dot_products(stride):
    """Polyphase taps (phase_scan.cuh's order) against polyphase copies of x give
    sum_j a_j x[S s + j] for every shift, including the last, and the ring's
    reads past the last shift stay inside one phase."""
    rng = np.random.default_rng(stride)
    d, m, t = 37, 300, base.SHIFTS_PER_THREAD
    a = rng.random(d)
    tp = SimpleNamespace(a=np.concatenate([rng.random(5), a]), offsets=np.array([0, 5, 5 + d]),
                         strides=np.array([1, stride], np.int32))
    ta, first, taps = base.phase_templates(tp)
    assert first.tolist() == [0, t] and taps[1] % t == 0 and first[1] % 2 == 0
    pairs = ta.reshape(-1, 2)[first[1]:first[1] + stride * taps[1]]
    np.testing.assert_allclose(pairs[:, 1], pairs[:, 0] ** 2, rtol=1e-6)
    x = rng.normal(size=m)
    pl = base.phase_length(m, stride)
    e = np.arange(stride * pl)
    p = (e % pl) * stride + e // pl
    phases = np.where(p < m, x[np.minimum(p, m - 1)], 0.0).reshape(stride, pl)
    n_shifts = (m - d) // stride + 1
    assert n_shifts - 1 + taps[1] + t - 1 < pl
    q = taps[1]
    for s in range(n_shifts):
        poly = sum(pairs[u * q:(u + 1) * q, 0] @ phases[u, s:s + q] for u in range(stride))
        assert poly == pytest.approx(a @ x[stride * s:stride * s + d], rel=1e-5, abs=1e-5)


def test_invalid_block_size_is_refused():
    with pytest.raises(ValueError, match="block_size"):
        basic.BasicBackend(block_size=96)


@pytest.mark.parametrize("cls", [basic.BasicBackend, thrust.ThrustBackend, simple.SimpleBackend])
def test_batches_bound_memory_and_launch_length(cls, small_plan):
    plan, periods = small_plan
    backend = cls()
    batch = backend.max_batch_periods(plan)
    assert batch >= 1
    assert batch * backend.scratch_bytes(plan) <= base.MEMORY_BUDGET
    assert batch == 1 or batch * base.scan_macs(plan) <= base.LAUNCH_MACS


def test_scan_macs_counts_shifts_times_lengths(small_plan):
    plan, _ = small_plan
    tp = plan.templates
    m = plan.lc.size + tp.maxwidth
    wi = len(tp.widths) - 1
    expect = ((m - tp.widths[wi]) // tp.strides[wi] + 1) * tp.lengths[wi]
    assert base.scan_macs(plan, wi, wi + 1) == expect
    assert base.scan_macs(plan) > base.scan_macs(plan, 0, 1)


def test_missing_names_a_reason_without_a_context():
    why = basic.BasicBackend.missing()
    assert why is None or isinstance(why, str) and why
    if why is not None:
        with pytest.raises(backends.BackendUnavailable, match="basic"):
            backends.get_backend("basic")


def test_cache_builds_once_and_evicts_least_recent():
    cache = KernelCache(maxsize=2)
    assert cache.get("a", lambda: 1) == 1
    assert cache.get("a", lambda: 99) == 1
    cache.get("b", lambda: 2)
    cache.get("a", lambda: 99)  # a is now the most recent
    cache.get("c", lambda: 3)  # evicts b
    assert "b" not in cache and "a" in cache and "c" in cache
    assert cache.builds == 3 and len(cache) == 2
    cache.clear()
    assert len(cache) == 0


def test_cache_by_identity_tells_equal_objects_apart_and_holds_them():
    import gc
    import weakref

    from backends.bounded_cache import BoundedCache

    class Source:  # compared by identity, as templates objects are
        pass

    cache, first, twin = BoundedCache(maxsize=2), Source(), Source()
    assert cache.get_by_identity((first,), lambda: "first", 7) == "first"
    assert cache.get_by_identity((first,), lambda: "again", 7) == "first"
    assert cache.get_by_identity((first,), lambda: "other key", 8) == "other key"
    assert cache.get_by_identity((twin,), lambda: "twin", 7) == "twin"  # evicts (first, 7)
    assert cache.builds == 3
    gone = weakref.ref(twin)
    del twin
    gc.collect()
    assert gone() is not None  # its entry holds it: no later object can take its id while it lives


def test_cache_rejects_zero_size():
    with pytest.raises(ValueError):
        KernelCache(maxsize=0)


def test_cache_failed_build_is_not_cached():
    cache = KernelCache()

    def fail():
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        cache.get("k", fail)
    assert "k" not in cache and cache.builds == 0


def test_cache_50_threads_build_each_key_once():
    cache = KernelCache(maxsize=8)
    results, barrier = [], threading.Barrier(50)

    def build(key):
        time.sleep(0.01)  # widen the race window
        return object()

    def worker(i):
        barrier.wait()
        key = i % 4
        results.append((key, cache.get(key, lambda: build(key))))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(50)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert cache.builds == 4
    for key in range(4):
        assert len({id(v) for k, v in results if k == key}) == 1


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_nvcc_cubin_reports_compile_errors():
    with pytest.raises(RuntimeError, match="nvcc failed"):
        kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": "x"})
    assert kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 32})[:4] == b"\x7fELF"


@pytest.fixture
def counted_compiles(monkeypatch, tmp_path):
    """compile_cubin replaced by a counter; the disk cache in tmp_path/cache."""
    calls = []

    def compile_cubin(source, arch, defines, options=()):
        calls.append(defines)
        if defines.get("BLOCK") == "x":
            raise RuntimeError("nvcc failed")
        return f"cubin {source} {sorted(defines.items())}".encode()

    monkeypatch.setattr(kernel_cache, "compile_cubin", compile_cubin)
    monkeypatch.setattr(kernel_cache, "nvcc_version", lambda: "nvcc 13.0")
    monkeypatch.setenv("TLS_KERNEL_CACHE_DIR", str(tmp_path / "cache"))
    return calls


def test_disk_cache_compiles_each_kernel_once(counted_compiles, tmp_path):
    first = kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 32})
    assert kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 32}) == first
    assert len(counted_compiles) == 1
    assert len(list((tmp_path / "cache").glob("*.cubin"))) == 1
    kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 64})
    kernel_cache.nvcc_cubin("basic.cu", "sm_80", {"BLOCK": 32})
    assert len(counted_compiles) == 3


def test_disk_cache_misses_after_a_source_edit(counted_compiles, monkeypatch, tmp_path):
    sources = tmp_path / "cuda"
    shutil.copytree(kernel_cache.CUDA_DIR, sources)
    monkeypatch.setattr(kernel_cache, "CUDA_DIR", sources)
    kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 32})
    (sources / "tls_common.cuh").write_text((sources / "tls_common.cuh").read_text() + "\n// edit\n")
    kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 32})
    assert len(counted_compiles) == 2


def test_sources_digest_reads_the_sources_again_only_after_a_change(monkeypatch, tmp_path):
    sources = tmp_path / "cuda"
    shutil.copytree(kernel_cache.CUDA_DIR, sources)
    monkeypatch.setattr(kernel_cache, "CUDA_DIR", sources)
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(self.name) or real(self))
    first = kernel_cache.sources_digest()
    assert len(reads) == len(list(sources.iterdir()))
    assert kernel_cache.sources_digest() == first and len(reads) == len(list(sources.iterdir()))  # no reads
    header = sources / "tls_common.cuh"
    stat = header.stat()
    header.write_bytes(header.read_bytes().replace(b"a", b"b", 1))  # same size, new contents
    os.utime(header, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    edited = kernel_cache.sources_digest()
    assert edited != first
    (sources / "new.cuh").write_text("// new\n")
    assert kernel_cache.sources_digest() not in (first, edited)


def test_disk_cache_keeps_no_failure_and_can_be_turned_off(counted_compiles, monkeypatch, tmp_path):
    for _ in range(2):
        with pytest.raises(RuntimeError, match="nvcc failed"):
            kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": "x"})
    assert len(counted_compiles) == 2
    monkeypatch.setenv("TLS_KERNEL_CACHE_DIR", "")
    for _ in range(2):
        kernel_cache.nvcc_cubin("basic.cu", "sm_90", {"BLOCK": 32})
    assert len(counted_compiles) == 4
    assert not (tmp_path / "cache").exists()


def test_pruned_learns_its_shared_memory_limit_once(monkeypatch):
    """folds_in_scan runs a few times per search: the device's opt-in limit is
    read once, pruned_period looked up (for its static memory) once, and only
    when a fold could fit at all; the shared layout refuses a fold beyond it."""
    import contextlib

    from backends.implementations.pruned import PrunedBackend

    fake_driver(monkeypatch, device_attribute=SimpleNamespace(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN="optin"))
    calls = {"optin": 0, "compile": 0}

    def attribute(name):
        calls["optin"] += 1
        return 232_448

    def compiled(block):
        calls["compile"] += 1
        return SimpleNamespace(get_function=lambda kernel: SimpleNamespace(shared_size_bytes=232_448 - 183_824))

    gpu = PrunedBackend()
    monkeypatch.setattr(gpu, "context", contextlib.nullcontext)
    monkeypatch.setattr(gpu, "_device", lambda: SimpleNamespace(get_attribute=attribute))
    monkeypatch.setattr(gpu, "module", compiled)

    def plan(n):
        return SimpleNamespace(lc=SimpleNamespace(size=n, uniform_weight=1.0),
                               templates=SimpleNamespace(maxwidth=n // 8))

    assert not gpu.folds_in_scan(plan(20_000))  # beyond the opt-in limit: nothing compiled
    assert calls == {"optin": 1, "compile": 0}
    assert [gpu.folds_in_scan(plan(n)) for n in (4_320, 4_320, 5_200, 100)] == [True, True, False, True]
    assert calls == {"optin": 1, "compile": 1}
    shared = PrunedBackend(layout="shared")
    for name in ("context", "_device", "module"):
        monkeypatch.setattr(shared, name, getattr(gpu, name))
    assert shared.refuses(plan(4_320)) is None
    assert "layout 'shared'" in shared.refuses(plan(20_000)) and not shared.folds_in_scan(plan(20_000))
    assert not PrunedBackend(layout="global").folds_in_scan(plan(100))


def test_templates_are_uploaded_once_per_sources(monkeypatch):
    """device_templates uploads once per template_sources (by identity: another
    templates object, or for pruned another pieces table) while it is among
    the last TEMPLATE_TABLES used: a survey's few template objects in any order."""
    from backends.implementations.pruned import PrunedBackend

    device = fake_pycuda(monkeypatch, FakeDriver())
    for gpu, swap_pieces in ((basic.BasicBackend(), False), (PrunedBackend(), True)):
        uploads = []
        monkeypatch.setattr(gpu, "template_sections", lambda tp: uploads.append(tp) or [("a", np.ones(3))])
        first, other = SimpleNamespace(pieces=object()), SimpleNamespace(pieces=object())
        kept = gpu.device_templates(first)
        assert gpu.device_templates(first) is kept and len(uploads) == 1 and len(device.copies) == len(uploads)
        gpu.device_templates(other)
        assert gpu.device_templates(first) is kept and len(uploads) == 2  # kept across the other
        first.pieces = object()
        gpu.device_templates(first)
        assert len(uploads) == (3 if swap_pieces else 2)
        uploads.clear()
        many = [SimpleNamespace(pieces=object()) for _ in range(base.TEMPLATE_TABLES)]
        for tp in many:
            gpu.device_templates(tp)
        gpu.device_templates(many[0])  # the most recent again: the next upload evicts many[1]
        gpu.device_templates(first)
        gpu.device_templates(many[0])
        gpu.device_templates(many[1])
        assert uploads == [*many, first, many[1]]
        device.copies.clear()


def test_a_pooled_backend_takes_each_light_curves_samples_from_its_pool(monkeypatch, small_plan):
    """No cuMemAlloc and cuMemFree a light curve where the backend keeps a
    pool (pruned, tensor): upload's samples come from it; basic allocates."""
    from backends.implementations import device_pool
    from backends.implementations.tensor import TensorBackend

    device = fake_pycuda(monkeypatch, FakeDriver())
    device.init = lambda: None
    device.Device = lambda k: SimpleNamespace(retain_primary_context=lambda: SimpleNamespace(push=lambda: None,
                                                                                               pop=lambda: None))
    pooled = []
    monkeypatch.setattr(device_pool, "DevicePool", lambda: SimpleNamespace(
        allocate=lambda nbytes: pooled.append(nbytes) or device.mem_alloc(nbytes)))
    plan = small_plan[0]
    for gpu, from_pool in ((TensorBackend(), True), (basic.BasicBackend(), False)):
        monkeypatch.setattr(gpu, "refuses", lambda plan: None)
        monkeypatch.setattr(gpu, "device_templates", lambda tp: None)
        pooled.clear()
        state = gpu.upload(plan)
        assert pooled == ([plan.lc.samples.nbytes] if from_pool else [])
        np.testing.assert_array_equal(device.at(state.y, np.float64, plan.lc.size), plan.lc.y)


def test_template_tables_go_up_in_one_copy_in_the_kernels_order(monkeypatch, small_plan):
    """Every table a kernel reads of the templates (pruned: TABLE_PARAMS; thrust:
    the polyphase taps too) in one allocation and one copy, each at its address."""
    from backends.implementations import pruned as module

    tp = small_plan[0].templates
    for gpu, names in ((basic.BasicBackend(), base.TEMPLATE_NAMES),
                       (thrust.ThrustBackend(), base.TEMPLATE_NAMES + thrust.PHASE_NAMES),
                       (module.PrunedBackend(scan_jobs=2), module.TABLE_NAMES + ("group_of", "group_start"))):
        device = fake_pycuda(monkeypatch, FakeDriver())
        tables = gpu.device_templates(tp)
        assert len(device.copies) == 1 and set(names) <= set(tables.offsets)
        sections = dict(gpu.template_sections(tp))
        for name in names:
            found = np.frombuffer(device.data, sections[name].dtype, sections[name].size,
                                  int(tables.pointer(name)) - device.BASE)
            assert np.array_equal(found, sections[name].ravel())
    assert np.array_equal(sections["widths"], tp.widths) and sections["widths"].dtype == np.int32
    assert np.array_equal(sections["s_max"], module.pruning.depth_limits(tp.widths, tp.depth_min))
    for got, want in zip((sections["group_of"], sections["group_start"]), module.width_groups(tp.strides, 2)):
        assert np.array_equal(got, want)


def test_pruned_queues_two_batches_at_most_and_reports_each_when_done(monkeypatch):
    """search_batches launches batch k + 1 before it waits for batch k, never
    more than two ahead of the host; progress counts a batch once the device
    has finished it; each batch's arguments point at its own part of the
    search's per-period arrays; the results' copy back is queued once, behind
    the last batch; the host's counts are made once, while the device runs;
    the stage clock is settled once, before the results."""
    import contextlib

    from backends.implementations import pruned as module

    log = []

    class Event:
        def __init__(self, k):
            self.k = k

        def synchronize(self):
            log.append(("wait", self.k))

    marks = iter(range(100))
    monkeypatch.setattr(module, "mark", lambda: Event(next(marks)))
    monkeypatch.setattr(module.EventClock, "settle", lambda clock: log.append("settle"))
    monkeypatch.setattr(module.EventClock, "stage", lambda clock, name: contextlib.nullcontext())
    gpu = module.PrunedBackend()
    periods = np.arange(10.0)
    staged = SimpleNamespace(pointer=lambda name, start=0: (name, start),
                             read_queued=lambda names, pinned: log.append(("read queued", names)) or (lambda: "found"))
    arrays = module.ScanArrays(staged, size=10, cascade=())
    monkeypatch.setattr(gpu, "context", contextlib.nullcontext)
    monkeypatch.setattr(gpu, "max_batch_periods", lambda plan: 4)
    monkeypatch.setattr(gpu, "_staged_periods", lambda state, periods: staged)
    monkeypatch.setattr(gpu, "_scan_arrays", lambda *args: log.append("scan arrays") or arrays)
    monkeypatch.setattr(gpu, "_fold", lambda state, periods, b: log.append(("fold", periods, b)) or "order")
    monkeypatch.setattr(gpu, "_queue_batch", lambda state, batch, clock, folded: log.append(
        ("queue", batch.size, folded, *batch.args("periods", "hi", "starts", "gain", "counters"))))
    monkeypatch.setattr(module.pruning, "host_work", lambda plan, lo, hi: log.append("host work") or {"shifts": 7})
    monkeypatch.setattr(gpu, "_results", lambda plan, found, known: log.append(("results", found, known)) or arrays)
    done = lambda k: log.append(("done", k))  # noqa: E731
    assert gpu.search_batches(SimpleNamespace(shared=False), None, periods, None, None, progress=done) is arrays
    assert log == [  # the first fold before the scan arrays; job offsets and counters from 0 in every batch
        ("fold", ("periods", 0), 4), "scan arrays",
        ("queue", 4, "order", ("periods", 0), ("hi", 0), ("starts", 0), ("gain", 0), ("counters", 0)),
        "host work",  # counted while the device runs the first batch
        ("queue", 4, None, ("periods", 4), ("hi", 4), ("starts", 0), ("gain", 4), ("counters", 0)),
        ("wait", 0), ("done", 4),
        ("queue", 2, None, ("periods", 8), ("hi", 8), ("starts", 0), ("gain", 8), ("counters", 0)),
        ("read queued", module.RESULTS),  # before the last batch's event, which the results wait for
        ("wait", 1), ("done", 4), ("wait", 2), ("done", 2),
        "settle", ("results", "found", {"shifts": 7}),
    ]


def test_an_error_in_the_context_frees_the_failed_frames_locals_while_it_is_current(monkeypatch):
    """PyCUDA leaks device memory and events freed with no current context:
    an error leaving ``context()`` must not carry them out in its
    traceback's frames."""
    current = []
    freed = []

    class Context:
        def push(self):
            current.append(self)

        def pop(self):
            current.pop()

    class DeviceObject:
        def __del__(self):
            freed.append(bool(current))

    fake_driver(monkeypatch, init=lambda: None, Device=lambda k: SimpleNamespace(retain_primary_context=Context))

    def failing_stage():
        held = DeviceObject()  # noqa: F841 (a local of the failed frame)
        raise ValueError("bound violated")

    gpu = simple.SimpleBackend()
    with pytest.raises(ValueError, match="bound violated"):
        with gpu.context():
            failing_stage()
    assert freed == [True] and not current


def test_pooled_blocks_go_back_only_where_a_context_is_current(monkeypatch):
    """PyCUDA aborts the process when a pooled block goes back to its pool
    with no current context (a Dask worker's profiler let a search's blocks go
    in the worker's event loop): such a block waits, allocated, until the next
    allocation or ``free_held`` in the context frees it, or the pool as it
    goes, in the context it was made in."""
    import gc
    import sys

    from backends.implementations.device_pool import DevicePool

    current, freed = [], []

    class Allocation:
        def __init__(self, nbytes):
            self.nbytes, self.valid = nbytes, True

        def __int__(self):
            return 1 << 40

        def free(self):
            freed.append((self.nbytes, bool(current)))
            self.valid = False

        def __del__(self):  # as PyCUDA's pooled allocation goes
            if self.valid:
                self.free()

    class Pool:
        managed_bytes, held_blocks = 96, 1

        def allocate(self, nbytes):
            return Allocation(nbytes)

        def free_held(self):
            freed.append(("held", bool(current)))

    ctx = SimpleNamespace(push=lambda: current.append(ctx))
    fake_driver(monkeypatch, Context=SimpleNamespace(get_current=lambda: current[-1] if current else None,
                                                     pop=current.pop))
    monkeypatch.setitem(sys.modules, "pycuda.tools", SimpleNamespace(DeviceMemoryPool=Pool))
    current.append(ctx)
    pool = DevicePool()
    block = pool.allocate(8)
    assert int(block) == 1 << 40 and (pool.managed_bytes, pool.held_blocks) == (96, 1)
    del block
    assert freed == [(8, True)]  # in the context: back to the pool at once

    block = pool.allocate(16)
    current.clear()
    lost = threading.Thread(target=lambda box: box.clear(), args=([block],))  # its last reference goes elsewhere
    del block
    lost.start()
    lost.join()
    gc.collect()
    assert freed == [(8, True)] and pool.orphans == 1  # no context there: kept
    current.append(ctx)
    kept = pool.allocate(32)
    assert freed == [(8, True), (16, True)] and pool.orphans == 0  # freed by the next allocation, in the context
    current.clear()
    block = pool.allocate(64)
    del block
    current.append(ctx)
    pool.free_held()
    assert freed[2:] == [(64, True), ("held", True)] and pool.orphans == 0

    block = pool.allocate(128)
    current.clear()
    del block, kept
    assert pool.orphans == 2
    del pool  # a search's state outlived its backend's context, then the backend went
    gc.collect()
    assert sorted(freed[4:]) == [(32, True), (128, True)] and current == []  # in the pool's context, popped after


def test_staged_writes_its_sections_in_one_copy_and_reads_a_span_in_one(monkeypatch):
    from backends.implementations.staged import Staged

    device = fake_pycuda(monkeypatch, FakeDriver())
    periods, lo = np.array([3.0, 2.5, 2.0]), np.array([1, 2, 3], np.int32)
    staged = Staged([("periods", periods), ("lo", lo), ("none", np.zeros(0, np.int32)),
                     ("counters", np.zeros(2, np.uint64)), ("gain", (np.float64, 3)), ("index", (np.int32, 3))],
                    device.mem_alloc)
    at = {name: int(staged.pointer(name)) - device.BASE for name in staged.offsets}
    assert at == {"periods": 0, "lo": 32, "none": 48, "counters": 48, "gain": 64, "index": 96}  # 16-byte aligned
    assert device.copies == [("htod async", 0, 64)]  # up to the last section the host wrote
    assert int(staged.pointer("lo", 2)) - device.BASE == 40 and int(staged.pointer("gain", 1)) - device.BASE == 72
    device.data[64:88] = np.array([0.5, 1.5, 2.5]).tobytes()  # what a kernel would write
    device.data[96:108] = np.array([7, -1, 2], np.int32).tobytes()
    device.data[48:56] = np.uint64(9).tobytes()
    found = staged.read(("counters", "gain", "index"))
    assert device.copies[1:] == [("dtoh", 48, 60)]
    assert found["counters"].tolist() == [9, 0] and found["gain"].tolist() == [0.5, 1.5, 2.5]
    assert found["index"].tolist() == [7, -1, 2] and found["index"].dtype == np.int32
    assert staged.read(("periods", "lo"))["lo"].tolist() == [1, 2, 3]


def test_staged_writes_device_sections_later_in_one_asynchronous_copy_of_their_span(monkeypatch):
    """``write`` sends sections declared by size in one asynchronous copy of
    the span they cover (gaps zeroed); it refuses a span over a section it was
    not given, and an array of the wrong size."""
    from backends.implementations.staged import Staged

    device = fake_pycuda(monkeypatch, FakeDriver())
    staged = Staged([("periods", np.array([3.0, 2.0])), ("lo", (np.int32, 3)), ("hi", (np.int32, 3)),
                     ("empty", (np.int32, 0)), ("gain", (np.float64, 2))], device.mem_alloc)
    assert device.copies == [("htod async", 0, 16)]  # a single section from the offset 0: copied as it is
    staged.write({"lo": [1, 2, 3], "hi": np.array([4, 5, 6], np.int64)})
    assert device.copies[1:] == [("htod async", 16, 28)]
    assert np.frombuffer(device.data, np.int32, 7, 16).tolist() == [1, 2, 3, 0, 4, 5, 6]
    with pytest.raises(ValueError, match=r"overwrite \['hi'\]"):
        staged.write({"lo": [1, 2, 3], "gain": [1.0, 2.0]})
    with pytest.raises(ValueError, match="lo holds 3 values, not 2"):
        staged.write({"lo": [1, 2]})
    assert len(device.copies) == 2


def test_upload_puts_the_samples_in_one_allocation_with_one_copy(monkeypatch, small_plan):
    import contextlib

    device = fake_pycuda(monkeypatch, FakeDriver())
    gpu = basic.BasicBackend()
    monkeypatch.setattr(gpu, "context", contextlib.nullcontext)
    monkeypatch.setattr(gpu, "device_templates", lambda tp: "templates")
    monkeypatch.setattr(gpu, "refuses", lambda plan: None)
    plan = small_plan[0]
    state = gpu.upload(plan)
    n = plan.lc.size
    assert device.copies == [("htod async", 0, int(state.w) - device.BASE + 8 * n)]
    for name in "tyw":
        start = int(getattr(state, name)) - device.BASE
        assert np.array_equal(np.frombuffer(device.data, np.float64, n, start), getattr(plan.lc, name))


def test_pruned_batch_size_is_asked_once_per_scratch_size_while_the_pool_holds_it(monkeypatch):
    """The free memory is read for a light curve's first search only: the
    pool then holds its batch's scratch. A new scratch size asks again, and
    so does the same size after the pool let its memory go."""
    import contextlib

    from backends.implementations import device_pool
    from backends.implementations import pruned as module
    from backends.protocol import TLSBackend

    asked = []
    fake_driver(monkeypatch, mem_get_info=lambda: asked.append(1) or ((10 << 30) - (len(asked) << 30), 80 << 30))
    gpu = module.PrunedBackend()
    monkeypatch.setattr(gpu, "context", contextlib.nullcontext)
    monkeypatch.setattr(gpu, "folds_in_scan", lambda plan: False)
    per_period = {"a": 1 << 20, "b": 3 << 20}
    monkeypatch.setattr(gpu, "scratch_bytes", lambda plan: per_period[plan.lc.name])
    plan = {name: SimpleNamespace(lc=SimpleNamespace(name=name, size=size), templates=SimpleNamespace(maxwidth=9))
            for name, size in (("a", 100), ("b", 200))}
    assert gpu.max_batch_periods(plan["a"]) == 4608 and len(asked) == 1  # min(8 GiB, 9 GiB / 2) / 1 MiB
    assert gpu.max_batch_periods(plan["a"]) == 4608 and len(asked) == 1
    assert gpu.max_batch_periods(plan["b"]) == (4 << 30) // (3 << 20) and len(asked) == 2
    monkeypatch.setattr(TLSBackend, "search", lambda self, plan, periods, progress=None: None)
    gpu._pool = SimpleNamespace(managed_bytes=device_pool.POOL_KEEP_BYTES + 1, free_held=lambda: None)
    gpu.search(plan["a"], None)  # another shape while the pool holds much: it lets go
    assert gpu.max_batch_periods(plan["b"]) == (7 << 29) // (3 << 20) and len(asked) == 3  # 7 GiB free now
    per_period["c"] = 1 << 10
    small = SimpleNamespace(lc=SimpleNamespace(name="c", size=50), templates=SimpleNamespace(maxwidth=9))
    assert gpu.max_batch_periods(small) == module.MAX_PERIODS  # a launch's length is bounded too


@pytest.mark.parametrize("shared", [True, False])
def test_pruned_scan_arrays_go_up_in_two_copies_and_come_back_in_one(monkeypatch, shared):
    """The periods (all a fold reads) in one copy, then the search's other
    per-period arrays, zeroed thresholds and counters in one asynchronous
    copy; the shared layout (pruned_period) gets no job offsets or
    thresholds; counters and the best fits come back in one copy, queued
    into a lent page-locked buffer, out of which the stats are copied."""
    from backends.implementations import pruned as module
    from backends.implementations.staged import PinnedBuffers

    device = fake_pycuda(monkeypatch, FakeDriver())
    gpu = module.PrunedBackend(scan_jobs=2)
    monkeypatch.setattr(gpu, "_allocate", device.mem_alloc)
    strides = SimpleNamespace(strides=np.array([1, 1, 1, 2]))
    lc = SimpleNamespace(least_weight=0.5)
    state = SimpleNamespace(shared=shared, base=SimpleNamespace(m=100, plan=SimpleNamespace(templates=strides, lc=lc)))
    periods, lo, hi = np.array([5.0, 4.0, 3.0]), np.array([0, 1, 1]), np.array([2, 4, 3])
    arrays = gpu._scan_arrays(state, gpu._staged_periods(state, periods), lo, hi)
    staged = arrays.staged
    assert arrays.size == 3 and arrays.cascade[0] == 0.5  # the least weight: A2's constant floor
    assert [copy[0] for copy in device.copies] == ["htod async", "htod async"]  # the periods (a fold's), then the rest
    assert staged.sizes["starts"] == (0 if shared else 4) and staged.sizes["threshold"] == (0 if shared else 3)
    at = {name: staged.offsets[name] for name in staged.offsets}
    data = np.frombuffer(device.data, np.uint8)
    assert np.array_equal(data[at["periods"]:at["periods"] + 24].view(np.float64), periods)
    assert np.array_equal(data[at["hi"]:at["hi"] + 12].view(np.int32), hi)
    if not shared:
        assert arrays.groups == 3  # pruned_scan's blocks per period: widths 1-3 are groups (1), (2), (3)
        assert data[at["starts"]:at["starts"] + 16].view(np.int32).tolist() == [0, 3, 6, 9]
        assert not data[at["threshold"]:at["threshold"] + 24].any()
    assert not data[at["counters"]:at["counters"] + 8 * len(module.pruning.COUNTERS)].any()
    device.data[at["gain"]:at["gain"] + 24] = np.array([1.0, 2.0, 3.0]).tobytes()
    device.data[at["index"]:at["index"] + 12] = np.array([1, -1, 0], np.int32).tobytes()
    device.data[at["depth"]:at["depth"] + 24] = np.array([0.9, 0.0, 0.8]).tobytes()
    plan = SimpleNamespace(lc=SimpleNamespace(chi2_flat=10.0), templates=SimpleNamespace(row_of_index=np.array([4, 6, 0])))
    with PinnedBuffers().lend() as pinned:
        found = staged.read_queued(module.RESULTS, pinned)
        span = at["depth"] + 24 - at["counters"]  # counters to the last depth: one copy into the pinned buffer
        assert device.copies[2] == ("dtoh async", at["counters"], span) and len(device.copies) == 3
        stats = gpu._results(plan, found(), {"shifts": 40, "brute_force_macs": 50})
        pinned(span)[:] = 0  # the next search's results: the stats own their arrays
    assert stats.chi2.tolist() == [9.0, 8.0, 7.0] and stats.rows.tolist() == [6, 0, 4]
    assert stats.depths.tolist() == [0.9, 0.0, 0.8]
    assert gpu.work == {**dict.fromkeys(module.pruning.COUNTERS, 0), "shifts": 40, "brute_force_macs": 50}


def test_width_groups_are_runs_of_one_stride_cut_at_the_block_size():
    from backends.implementations.pruned import width_groups

    group_of, group_start = width_groups([1, 1, 1, 1, 1, 2, 2, 3, 4, 4, 4], 2)
    assert group_start.tolist() == [0, 2, 4, 5, 7, 8, 10, 11]  # then the width count
    assert group_of.tolist() == [0, 0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7]  # then the group count
    assert [g.tolist() for g in width_groups([3, 3, 3], 8)] == [[0, 0, 0, 1], [0, 3]]
    assert [g.tolist() for g in width_groups([], 8)] == [[0], [0]]


def test_pruned_fold_sorts_in_shared_memory_where_order_and_enough_buckets_fit(monkeypatch):
    from backends.implementations import pruned as module

    monkeypatch.setattr(module, "FOLD_BUCKETS", 24576)
    monkeypatch.setattr(module, "FOLD_ORDER_BYTES", 110 << 10)
    assert module.fold_buckets(4320) == (4320, True)  # a bucket per sample beside the order
    assert module.fold_buckets(18000) == (10160, True)  # what is left of 110 KiB: 2 blocks per SM
    assert module.fold_buckets(22600) == (22600, False)  # 5,560 buckets would be under n / 4
    assert module.fold_buckets(28000) == (24576, False)  # the order in global memory, the usual buckets
    monkeypatch.setattr(module, "FOLD_ORDER_BYTES", 0)
    assert module.fold_buckets(100) == (100, False)


def test_pinned_buffers_are_lent_one_per_use_reused_across_backends_and_bounded(monkeypatch):
    """cuMemHostAlloc takes milliseconds: a buffer given back is lent again
    (to any backend of the process), the smallest that fits; two uses at once
    get two buffers; at most ``keep`` stay, the largest."""
    from backends.implementations.staged import PinnedBuffers

    made = []
    fake_driver(monkeypatch, pagelocked_empty=lambda size, dtype: made.append(size) or np.zeros(size, dtype))
    buffers = PinnedBuffers(keep=2)
    with buffers.lend() as take:
        first = take(100)
    with buffers.lend() as take, buffers.lend() as other:
        assert take(80) is first  # reused
        second = other(50)  # the first is out: a new one
    assert made == [100, 50]
    with buffers.lend() as take:
        assert take(40) is second and len(take(300)) == 300  # the smallest that fits; then a new, larger one
    assert made == [100, 50, 300]
    with buffers.lend() as take:
        assert take(200) is not first and made == [100, 50, 300]  # the 300 one, not the first on the list
    with buffers.lend() as take:
        assert take(10) is first  # 50 was dropped: the two largest are kept
    with pytest.raises(RuntimeError), buffers.lend() as take:
        take(1)
        raise RuntimeError("a failed search gives its buffer back too")
    assert sorted(len(b) for b in buffers._free) == [100, 300]


def test_release_cached_lets_the_compiled_modules_and_free_page_locked_buffers_go(monkeypatch):
    """A Dask worker's task thread calls it at the end of a run: what it drops
    goes there, in its GPU context's thread, not at the worker's exit."""
    from backends.implementations import staged

    fake_driver(monkeypatch, pagelocked_empty=lambda size, dtype: np.zeros(size, dtype))
    base.KERNELS.get(("variant", 1), lambda: "module")
    with staged.PINNED.lend() as take:
        take(64)
    with staged.PINNED.lend() as lent:
        out = lent(128)  # the free one is too small: a new one, still lent while the cache goes
        base.release_cached()
    assert len(base.KERNELS) == 0
    assert staged.PINNED._free == [out]  # the free one went; the lent one came back
    staged.PINNED.clear()


def test_pruned_refuses_linear_tables_of_other_than_its_kernels_pieces():
    """line_terms unrolls LINE_PIECES pieces: tables of another count would
    read a neighbouring width's, so they are refused before any launch, when
    the tables are made (once per templates object, not per launch)."""
    from backends import pruning
    from backends.implementations.pruned import PrunedBackend

    templates = SimpleNamespace(pieces=SimpleNamespace(k_lines=pruning.LINE_PIECES - 1, k_max=8))
    with pytest.raises(ValueError, match=f"take {pruning.LINE_PIECES} linear pieces, not {pruning.LINE_PIECES - 1}"):
        PrunedBackend().template_sections(templates)
    assert PrunedBackend().kernel_defines(256)["LINE_PIECES"] == pruning.LINE_PIECES


def test_pruned_seeds_copy_the_cumulative_flux_to_shared_memory_where_it_fits(monkeypatch):
    from backends.implementations import pruned as module

    gpu = module.PrunedBackend()
    monkeypatch.setattr(gpu, "shared_limit", lambda kernel, block: 200 << 10)
    assert gpu._seed_shared(20159, 256) == 8 * 20160  # TESS-like: m + 1 doubles
    assert gpu._seed_shared(25600, 256) == 0  # 204,808 bytes: over the device's limit
    monkeypatch.setattr(module, "SEED_CS_BYTES", 8 * 101)
    assert gpu._seed_shared(100, 256) == 808 and gpu._seed_shared(101, 256) == 0


def test_pruned_folds_each_batch_of_the_global_layout_with_its_own_size(monkeypatch):
    """A batch's fold takes the batch's first period's address and its count
    (an address alone has no size: the fold once covered one period)."""
    import contextlib

    from backends.implementations import pruned as module

    gpu = module.PrunedBackend()
    folds = []
    monkeypatch.setattr(gpu, "_fold", lambda state, periods, b: folds.append((periods, b)) or "order")
    monkeypatch.setattr(gpu, "_scan", lambda state, folded, batch, clock: folds.append(folded))
    clock = SimpleNamespace(stage=lambda name: contextlib.nullcontext())
    staged = SimpleNamespace(pointer=lambda name, start=0: (name, start),
                             read_queued=lambda names, pinned: log.append(("read queued", names)) or (lambda: "found"))
    arrays = module.ScanArrays(staged, size=10, cascade=())
    gpu._queue_batch(SimpleNamespace(shared=False), arrays.view(4, 7), clock)
    gpu._queue_batch(SimpleNamespace(shared=True), arrays.view(7, 10), clock)
    gpu._queue_batch(SimpleNamespace(shared=False), arrays.view(0, 4), clock, folded="queued")
    assert folds == [(("periods", 4), 3), "order", None, "queued"]  # a fold queued already is not queued again


def test_scan_launch_sends_windows_and_reads_the_best_fits_in_one_copy_each(monkeypatch):
    """basic's and thrust's scan: lo and hi up in one copy, the kernel's
    arguments in pycuda_base's order, gain, index and depth back in one."""
    import contextlib

    device = fake_pycuda(monkeypatch, FakeDriver())
    gpu = basic.BasicBackend()
    launches = []

    def kernel(*args, **launch):
        launches.append((args, launch))
        out = dict(zip(base.OUTS, (int(a) - device.BASE for a in args[-3:])))
        device.data[out["gain"]:out["gain"] + 16] = np.array([2.0, 3.0]).tobytes()
        device.data[out["index"]:out["index"] + 8] = np.array([1, -1], np.int32).tobytes()
        device.data[out["depth"]:out["depth"] + 16] = np.array([0.5, 0.0]).tobytes()

    monkeypatch.setattr(gpu, "context", contextlib.nullcontext)
    monkeypatch.setattr(gpu, "function", lambda name, block, shared=0: kernel)
    plan = SimpleNamespace(lc=SimpleNamespace(chi2_flat=10.0),
                           templates=SimpleNamespace(row_of_index=np.array([4, 6, 0]), depth_min=1e-5,
                                                     signal_depth=0.5))
    state = SimpleNamespace(plan=plan, block=32, m=7, templates=("w", "s", "o", "a", "v"))
    stats = gpu.chi2_scan(state, ("rw", "wf", "cs"), np.array([2.0, 1.0]), np.array([0, 1]), np.array([2, 2]))
    (args, launch), = launches
    assert args[:4] == ("rw", "wf", "cs", 7) and args[6:11] == state.templates and args[11:13] == (1e-5, 0.5)
    lo, hi = (np.frombuffer(device.data, np.int32, 2, int(a) - device.BASE) for a in args[4:6])
    assert lo.tolist() == [0, 1] and hi.tolist() == [2, 2] and launch["grid"] == (2, 1)
    assert [c[0] for c in device.copies] == ["htod async", "dtoh"]
    assert stats.chi2.tolist() == [8.0, 7.0] and stats.rows.tolist() == [6, 0]


def test_function_is_looked_up_once_and_its_shared_limit_only_raised(monkeypatch):
    calls = []
    fake_driver(monkeypatch, function_attribute=SimpleNamespace(MAX_DYNAMIC_SHARED_SIZE_BYTES="max"))

    class Module:
        def get_function(self, name):
            calls.append(("get", name))
            return SimpleNamespace(set_attribute=lambda attr, value: calls.append((attr, value)))

    modules = [Module()]
    gpu = basic.BasicBackend()
    monkeypatch.setattr(gpu, "module", lambda block: modules[-1])
    fn = gpu.function("k", 32, 100)
    assert gpu.function("k", 32, 50) is fn and gpu.function("k", 32) is fn
    gpu.function("k", 32, 200)
    assert calls == [("get", "k"), ("max", 100), ("max", 200)]
    modules.append(Module())  # the kernel cache compiled the module again: look it up again
    assert gpu.function("k", 32, 10) is not fn and calls[-2:] == [("get", "k"), ("max", 10)]


def test_launch_pipeline_times_each_pack_on_its_stream_and_retires_in_order(monkeypatch):
    """Two slots: the third pack waits for the first's (its slot's) events,
    each stage timed by events on the slot's stream; drain retires the rest
    oldest first, abandon drops what is in flight untimed."""
    from backends.implementations.launch_pipeline import LaunchPipeline
    from backends.protocol import StageTimes

    fake_pycuda(monkeypatch, FakeDriver())
    log, timings = [], StageTimes()
    pipe = LaunchPipeline(timings, depth=2)
    pack = SimpleNamespace(nbytes=8, out_nbytes=4, write=lambda buffer: None)
    launch = lambda pack, dev_in, dev_out, stream: log.append(("launch", stream))  # noqa: E731
    for k in range(3):
        pipe.submit(pack, launch, lambda out, k=k: log.append(("done", k)))
    assert log[2] == ("done", 0) and log[0][1] is log[3][1] is not log[1][1]  # slot 0 again for pack 2
    pipe.drain()
    assert log[4:] == [("done", 1), ("done", 2)]
    assert timings["upload"] == timings["chi2_scan"] == timings["download"] == 3 * 1e-3  # 1 ms each
    pipe.submit(pack, launch, lambda out: log.append("never"))
    pipe.abandon()
    pipe.drain()
    assert "never" not in log and timings["upload"] == 3e-3


def test_width_groups_are_built_once_per_strides_and_block_size():
    from backends.implementations.pruned import GROUPS, cached_groups, width_groups

    before = GROUPS.builds
    first = cached_groups([1, 1, 2], 2)
    assert cached_groups(np.array([1, 1, 2], np.int32), 2) is first and GROUPS.builds == before + 1
    assert [g.tolist() for g in cached_groups([1, 1, 2], 1)] == [g.tolist() for g in width_groups([1, 1, 2], 1)]
    assert [g.tolist() for g in cached_groups([1, 2, 2], 2)] == [[0, 1, 1, 2], [0, 1, 3]]
    assert GROUPS.builds == before + 3
