"""The CUDA C sources compile with nvcc for sm_90 (no GPU needed), with every
kernel the backends launch present, no register spills and no stack frame (measured
exceptions in SPILLS_ALLOWED)."""

import functools
import re
import shutil
import subprocess

import pytest

from backends.kernel_cache import nvcc_command

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")

KERNELS = {
    "basic.cu": ({}, {"basic_fold_sort", "scan_folded"}),
    "simple.cu": ({}, {"simple_search"}),
    "thrust.cu": ({"ITEMS": 8}, {"thrust_tile_sort", "thrust_merge_pass", "thrust_gather",
                                 "thrust_scan", "scan_folded"}),
    "pruned.cu": ({}, {"pruned_fold", "pruned_fold_shared", "pruned_prefix", "pruned_seed", "pruned_scan",
                      "pruned_period", "reduce_jobs"}),
    "tensor_screen.cu": ({}, {"tensor_search", "tensor_search_w"}),
}
REGISTER_BUDGET = 128  # keeps 256-thread blocks at full residency
# Measured exceptions, registers, (kernel, block). None now: at 32 threads the
# tensor kernels' launch bounds leave ptxas up to 255 (they run at 384 threads,
# two blocks an SM, in 80, and at 512, one block, in 116), and both had taken
# more than the budget there (tensor_search 167 with bucket_rank_n, 4064ee2;
# tensor_search_w up to 142, 2b423d8); at a5749e7 they take 127 and 116.
REGISTERS_ALLOWED = {}
# Measured exceptions, bytes: pruned_scan keeps its job in registers and spills
# a little to L1; without, the 78-day TESS-like search takes 0.197 s, not 0.175 s
# (H100); its exact tiles of two survivors (140 bytes of spill loads) took the
# 78-day cascade from 72.7 to 63 ms (reports/gpu/pruned_global_2026-11-23f_H100),
# the linear K-piece bound (240-256 bytes) from 64 to 42 ms
# (reports/gpu/pruned_rank_2026-11-23g_H100).
# pruned_fold_shared: 4-8 bytes at 256 threads (32 registers: eight blocks per
# SM); at 1,024 threads (TESS-size folds) it took the TESS-like fold from 0.9 to
# 0.6 ms (reports/gpu/pruned_fold_2026-11-24_H100).
SPILLS_ALLOWED = {"pruned_scan": 256, "pruned_fold_shared": 8}


def ptxas_report(source, block, extra, tmp_path):
    cmd = nvcc_command(source, "sm_90", {"BLOCK": block, **extra}, ["-Xptxas", "-v"],
                       tmp_path / "k.cubin")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return parse_ptxas(done.stderr)


def parse_ptxas(text):
    """{function: (registers, spill stores, spill loads, stack bytes)} from
    -Xptxas -v; registers None for a device function a kernel calls."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            stack, st, ld = map(int, m.groups())
            out[name] = [None, st, ld, stack]
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and name in out:
            out[name][0] = int(m.group(1))
    return {k: tuple(v) for k, v in out.items()}


def test_parse_ptxas_reads_registers_and_spills():
    text = ("ptxas info    : Function properties for k1\n"
            "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
            "ptxas info    : Used 40 registers, used 1 barriers\n")
    assert parse_ptxas(text) == {"k1": (40, 4, 4, 8)}
    called = "ptxas info    : Function properties for _Z1fv\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    assert parse_ptxas(called + text) == {"_Z1fv": (None, 0, 0, 0), "k1": (40, 4, 4, 8)}


@pytest.mark.parametrize("block", [32, 256])
@pytest.mark.parametrize("source", sorted(KERNELS))
def test_source_compiles_without_spills(source, block, tmp_path):
    extra, expected = KERNELS[source]
    report = ptxas_report(source, block, extra, tmp_path)
    assert {name for name, (registers, *_) in report.items() if registers is not None} == expected
    for kernel, (registers, spill_st, spill_ld, stack) in report.items():  # kernels and called functions
        assert max(spill_st, spill_ld, stack) <= SPILLS_ALLOWED.get(kernel, 0), kernel
        assert registers is None or registers <= REGISTERS_ALLOWED.get((kernel, block), REGISTER_BUDGET), kernel


def test_pruned_period_compiles_without_spills_at_its_block(tmp_path):
    from backends.implementations.pruned import SHARED_BLOCK

    report = ptxas_report("pruned.cu", SHARED_BLOCK, {}, tmp_path)
    assert report["pruned_period"][1:] == (0, 0, 0)


def test_pruned_modules_past_its_block_leave_pruned_period_out_on_purpose(tmp_path):
    """The fold-only module (FOLD_BLOCK threads) compiles without pruned_period because
    kernel_defines says so (PERIOD_KERNEL 0), not because its queues happen to be too
    small: with the kernel asked for, queues too small for a flush fail to compile."""
    from backends.implementations.pruned import FOLD_BLOCK, PrunedBackend

    defines = PrunedBackend().kernel_defines(FOLD_BLOCK)
    assert defines["PERIOD_KERNEL"] == 0
    report = ptxas_report("pruned.cu", FOLD_BLOCK, defines, tmp_path)
    assert "pruned_fold_shared" in report and "pruned_period" not in report
    cmd = nvcc_command("pruned.cu", "sm_90", {"BLOCK": FOLD_BLOCK, **defines, "PERIOD_KERNEL": 1}, (),
                       tmp_path / "k.cubin")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode != 0 and "no room for a flush's survivors" in done.stderr


def test_compile_error_is_reported(tmp_path):
    cmd = nvcc_command("basic.cu", "sm_90", {"BLOCK": "not_a_number"}, (), tmp_path / "k.cubin")
    assert subprocess.run(cmd, capture_output=True).returncode != 0


def test_pruned_profile_build_keeps_the_period_kernel_unspilled(tmp_path):
    """scripts/profile_pruned.py --clocks builds with STAGE_CLOCKS: the stage
    cycles it reads must come from the same register layout, not a spilling one."""
    from backends.implementations.pruned import SHARED_BLOCK

    report = ptxas_report("pruned.cu", SHARED_BLOCK, {"STAGE_CLOCKS": 1}, tmp_path)
    assert report["pruned_period"][1:] == (0, 0, 0)


H100_SHARED_OPTIN = 232448  # bytes of shared memory a block may opt in to on sm_90 (H100, H200)


@pytest.mark.parametrize("case", ["k2", "k2w"])
def test_k2_like_folds_fit_pruned_period_beside_its_queues(case, tmp_path):
    """pruned_period's static shared memory (its queues: PERIOD_CHUNK) and a
    K2-like fold with the linear bound's prefix sums fit one block's shared
    memory: growing either would silently put K2-like searches back on the
    constant pieces (reports/gpu/NOTES.md step 74); with errors that differ
    (k2w: w instead of pj) the fold fits too, which would otherwise go to the
    global layout (step 78)."""
    from backends.implementations.pruned import SHARED_BLOCK, PrunedBackend
    from gpu_timing import case_plan

    cmd = nvcc_command("pruned.cu", "sm_90", {"BLOCK": SHARED_BLOCK, **PrunedBackend().kernel_defines(SHARED_BLOCK)},
                       ["-Xptxas", "-v"], tmp_path / "k.cubin")
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    static = int(re.search(r"Function properties for pruned_period\n.*\n.*?(\d+) bytes smem", done.stderr).group(1))
    plan = case_plan(case)[0]
    uniform = case == "k2"
    assert plan.lc.size == 4320 and (plan.lc.uniform_weight > 0) == uniform
    assert static + 8 * PrunedBackend.shared_doubles(plan, uniform) <= H100_SHARED_OPTIN


SM_SHARED = 228 * 1024  # shared memory an SM on the H100 and H200
DRIVER_SHARED = 1024  # the driver's, a block


@pytest.mark.parametrize("clocks", [False, True], ids=["build", "profile_build"])
def test_tensor_kernels_fit_their_shapes_without_spills(clocks, tmp_path):
    """Each kernel at its shape (tensor.SHAPES) and defines, and in the profile
    build (STAGE_CLOCKS: scripts/profile_pruned.py --backend tensor --clocks,
    whose cycles must come from the same register layout): no spills, at most
    the registers its blocks per SM allow (tensor_search two, tensor_search_w
    one), and its static shared memory beside a K2-like fold's
    (tensor_tables.shared_bytes) within an SM's 228 KB (1 KB a block
    reserved) that many times: the shapes measured (NOTES step 96). The
    functions the kernels call (their search, kept out of the queue's loop,
    NOTES step 102) spill nothing either. The
    folds: the timing case's (4,320 points) and the survey's (4,335, which
    ``tensor_search`` takes): at 1a9332c 336 bytes more of static shared
    memory left the survey's one block an SM and 233 curves/s (309 before;
    H200); since b6f1f17 (``au`` in float32) ~39 KB are to spare."""
    import datasets
    from backends import make_plan
    from backends.implementations.tensor import SHAPES, TensorBackend
    from backends.tensor_tables import fold_shape, shared_bytes
    from gpu_timing import case_plan

    lc = datasets.simulate(seed=0, preset="k2")
    survey = make_plan(lc.t, lc.y, lc.dy)[0]
    assert (survey.lc.size, TensorBackend.kernel_for(survey)[0]) == (4335, "tensor_search")
    for kernel, blocks in (("tensor_search", 2), ("tensor_search_w", 1)):
        threads, tiles = SHAPES[kernel]
        defines = {"BLOCK": threads, **TensorBackend().kernel_defines(threads)}
        if clocks:
            defines["STAGE_CLOCKS"] = 1
        cmd = nvcc_command("tensor_screen.cu", "sm_90", defines, ["-Xptxas", "-v"], tmp_path / f"{kernel}.cubin")
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        report = parse_ptxas(done.stderr)
        registers, *spills = report[kernel]
        assert spills == [0, 0, 0] and registers * threads * blocks <= 65536, kernel
        own = f"search_callILb{int(kernel == 'tensor_search_w')}E"  # search_call<W>, mangled
        calls = {name: got for name, got in report.items() if own in name}
        assert calls, f"{kernel}'s search is a call (tensor_screen.cu's search_queue)"
        assert all(got[1:] == (0, 0, 0) for got in calls.values()), calls
        static = int(re.search(rf"Function properties for {kernel}\n.*\n.*?(\d+) bytes smem", done.stderr).group(1))
        for plan in (case_plan("k2")[0], survey):
            mp = fold_shape(plan.templates, plan.lc.size, tiles)[1]
            fold = shared_bytes(plan.templates, plan.lc.size, mp)
            assert blocks * (static + fold + DRIVER_SHARED) <= SM_SHARED, (kernel, plan.lc.size, fold, static)


def test_tensor_search_compiles_in_debug_mode(tmp_path):
    from backends.implementations.tensor import SHAPES, TensorBackend

    threads = SHAPES["tensor_search"][0]
    defines = {"BLOCK": threads, **TensorBackend(debug=True).kernel_defines(threads)}
    report = ptxas_report("tensor_screen.cu", threads, defines, tmp_path)
    assert {"tensor_search", "tensor_search_w"} <= set(report)
