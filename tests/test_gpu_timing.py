"""scripts/gpu_timing.py's option sweep and clock, scripts/gpu_aba.sh's refusal
without the parent's tree, scripts/gpu_env.sh's wheels carried twice and its
header's sources digest, scripts/pruned_variants.py's variants and its check of
the counters they must share, scripts/profile_pruned.py's names for the stage
clocks (the timing itself needs a GPU)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import gpu_timing

ROOT = Path(__file__).resolve().parents[1]


def test_sweep_is_every_combination_of_the_options():
    assert gpu_timing.sweep(["prune_min=1,8", "fine_min=16,32,64"]) == [
        {"prune_min": p, "fine_min": f} for p in (1, 8) for f in (16, 32, 64)]
    assert gpu_timing.sweep(["block_size=32,256"]) == [{"block_size": 32}, {"block_size": 256}]
    assert gpu_timing.sweep([]) == []


def test_warm_times_repeat_until_both_the_count_and_the_seconds_are_reached(monkeypatch):
    clock = iter(range(1000))
    monkeypatch.setattr(gpu_timing.time, "perf_counter", lambda: next(clock) * 0.001)
    assert gpu_timing.warm_times(lambda: next(clock), 5) == pytest.approx([0.002] * 5)  # one tick inside each
    assert len(gpu_timing.warm_times(lambda: next(clock), 5, min_seconds=0.03)) == 15
    assert len(gpu_timing.warm_times(lambda: next(clock), 5, min_seconds=0.004)) == 5


def test_aba_without_the_parents_tree_says_how_to_make_it_and_fails(tmp_path):
    (tmp_path / "scripts").mkdir()
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_aba.sh")], cwd=tmp_path, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")})
    assert done.returncode == 1 and "no _ab here" in done.stdout
    assert not (tmp_path / "out").exists()  # nothing timed, nothing written


def test_pruned_variants_give_each_shape_its_defines_within_static_shared_memory(tmp_path):
    """scripts/pruned_variants.py: a variant's module gets its shifts per thread
    at a time and a queue that 48 KiB of static shared memory holds at its block
    (nvcc refuses more), other blocks the default's defines."""
    import shutil

    import pruned_variants
    from backends.implementations import pruned as module
    from backends.kernel_cache import nvcc_command

    backend = pruned_variants.variant_backend(768, 1)
    assert backend.shared_block == 768 and module.PrunedBackend.shared_block == module.SHARED_BLOCK  # its own only
    defines = backend.kernel_defines(768)
    assert defines["PERIOD_AT_ONCE"] == 1 and defines["CHUNK"] == pruned_variants.chunk(768)
    assert backend.kernel_defines(256) == module.PrunedBackend().kernel_defines(256)
    if shutil.which("nvcc"):
        for block, at_once in ((768, 1), (640, 2)):
            done = subprocess.run(nvcc_command("pruned.cu", "sm_90", {
                "BLOCK": block, **pruned_variants.variant_backend(block, at_once).kernel_defines(block)},
                ["-Xptxas", "-v"], tmp_path / "k.cubin"), capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert "Function properties for pruned_period" in done.stderr, block  # not left out for its queues


def test_pruned_variants_pass_a_variants_defines_to_its_block_only():
    import pruned_variants

    assert pruned_variants.parse_variant("512x2") == (512, 2, {}, {})
    assert pruned_variants.parse_variant("512x1:EXACT_LANES=4:GRAB_ITEMS=1:fine_bound=constant:fine_min=16") == (
        512, 1, {"EXACT_LANES": 4, "GRAB_ITEMS": 1}, {"fine_bound": "constant", "fine_min": 16})
    backend = pruned_variants.variant_backend(*pruned_variants.parse_variant("512x2:EXACT_LANES=4:fine_bound=constant"))
    assert backend.kernel_defines(512)["EXACT_LANES"] == 4 and backend.fine_bound == "constant"
    assert "EXACT_LANES" not in backend.kernel_defines(256)


def test_tensor_variants_take_their_threads_tiles_and_defines():
    """--backend tensor: a variant's threads, tiles per job (which its fold's
    padding follows) and defines; the backend's own are left alone; --same-counts
    takes tensor's counters."""
    import pruned_variants
    from backends.implementations.tensor import SHAPES, TensorBackend
    from backends.tensor_tables import fold_shape

    backend = pruned_variants.tensor_variant(*pruned_variants.parse_variant("256x4:MIN_BLOCKS=3:debug=1"))
    assert backend.shapes == {"tensor_search": (256, 4), "tensor_search_w": (256, 4)} and backend.debug
    assert {k: backend.kernel_defines(256)[k] for k in ("TPJ", "MIN_BLOCKS", "DEBUG")} == {
        "TPJ": 4, "MIN_BLOCKS": 3, "DEBUG": 1}
    assert TensorBackend.shapes is SHAPES and {k: TensorBackend().kernel_defines(384)[k] for k in ("TPJ", "TPJ_W")} \
        == {"TPJ": SHAPES["tensor_search"][1], "TPJ_W": SHAPES["tensor_search_w"][1]}
    plan = gpu_timing.case_plan("k2")[0]
    assert backend.fold_of(plan)[2] == fold_shape(plan.templates, plan.lc.size, 4)[1]
    with pytest.raises(SystemExit):
        pruned_variants.main(["--backend", "tensor", "--same-counts", "fine_pass"])


def test_pruned_variants_time_the_kernel_where_recorded_else_the_scan_stage_not_their_sum():
    """tensor records its kernel by CUDA events inside its scan stage; pruned
    its scan stage and that stage's parts: either counted once."""
    import pruned_variants

    assert pruned_variants.scan_seconds({"upload": 1.0, "chi2_scan": 3.4, "chi2_scan.kernel": 3.2}) == 3.2
    assert pruned_variants.scan_seconds({"chi2_scan": 6.3, "chi2_scan.cascade": 4.9, "chi2_scan.seed": 0.5}) == 6.3


def test_pruned_variants_name_the_counters_a_variant_changed():
    """--same-counts: a variant whose named counters differ from the first's is
    reported (a gate must not drop a survivor); an unknown name is refused
    before any GPU work."""
    import pruned_variants

    first = {"depth_pass": 10, "coarse_pass": 4, "fine_pass": 2}
    works = {"512x2": first, "512x2:ROW_GATE=1": {**first, "depth_pass": 7},
             "512x2:X=1": {**first, "coarse_pass": 3}}
    assert pruned_variants.differing_counts(works, ["coarse_pass", "fine_pass"]) == ["512x2:X=1: coarse_pass 4 -> 3"]
    assert pruned_variants.differing_counts(works, []) == []
    with pytest.raises(SystemExit):
        pruned_variants.main(["--same-counts", "coarse_pass,survivors"])


def test_profile_clocks_are_pruneds_and_tensors_alone(monkeypatch, capsys):
    import profile_pruned

    monkeypatch.setattr("sys.argv", ["profile_pruned.py", "--backend", "simple", "--clocks", "k2"])
    with pytest.raises(SystemExit):
        profile_pruned.main()
    assert "only with --backend pruned or tensor" in capsys.readouterr().err


def test_profile_names_tensors_clocks_in_the_kernels_order_per_block_and_period():
    """tensor_screen.cu's clock slots by position, one name each; the stages
    per period, the warps' own also per warp."""
    import profile_pruned

    source = (ROOT / "backends" / "cuda" / "tensor_screen.cu").read_text()
    enum = re.search(r"enum \{ (CLOCK_SORT[^}]*?),\s*N_CLOCKS \};", source).group(1)
    kernel = {"CLOCK_SORT": "fold: phases and order", "CLOCK_GATHER": "fold: gather",
              "CLOCK_PREFIX": "fold: prefix sums", "CLOCK_SCREEN": "screen", "CLOCK_RECHECKS": "last re-checks",
              "CLOCK_FINAL": "rest", "N_PERIODS": "periods", "CLOCK_WARP_SCREEN": "screen: mean warp's own",
              "CLOCK_WARP_RECHECKS": "last re-checks: mean warp's own", "CLOCK_WHOLE": "period, whole",
              "CLOCK_LIFE": "block's life"}
    assert [kernel[" ".join(name.split())] for name in enum.split(",")] == list(profile_pruned.TENSOR_SLOTS)
    found = profile_pruned.tensor_named([20, 30, 40, 500, 60, 70, 10, 1200, 360, 900, 950], warps=12)
    assert "periods" not in found and found["fold: phases and order"] == 2 and found["screen"] == 50
    assert found["screen: mean warp's own"] == 10 and found["last re-checks: mean warp's own"] == 3
    assert found["period, whole"] == 90 and found["block's life"] == 95


def test_profile_names_the_stage_clocks_in_the_kernels_order():
    """profile_pruned reads pruned.cu's clock slots by position: one name per
    slot of the kernel's enum, in its order; the fold's parts add up to the
    fold, and the coarse stage is shown without the flushes its mark spans."""
    import profile_pruned

    source = (ROOT / "backends" / "cuda" / "pruned.cu").read_text()
    enum = re.search(r"enum \{ (CLOCK_FOLD[^}]*?),\s*N_CLOCKS \};", source).group(1)
    kernel = {"CLOCK_FOLD": "fold: phases", "CLOCK_PREFIX": "prefix sums", "CLOCK_SEEDS": "seeds",
              "CLOCK_COARSE": "coarse stage", "CLOCK_FLUSH": "flushes", "CLOCK_FINE": "flushes: fine stage",
              "CLOCK_EXACT": "flushes: exact gains", "N_FLUSHES": "flush count", "CLOCK_SORT": "fold: bucket sort",
              "CLOCK_GATHER": "fold: gather", "CLOCK_GATE": "row gate", "CLOCK_ROUNDS": "coarse: warp 0's fine rounds"}
    assert [kernel[name.strip()] for name in enum.split(",")] == list(profile_pruned.SLOTS)
    found = profile_pruned.named([1, 20, 30, 100, 40, 5, 6, 2, 7, 8, 9, 3])
    assert found["fold and sort"] == 16 and found["fold: bucket sort"] == 7
    assert found["coarse stage"] == 60 and found["flushes: exact gains"] == 6
    assert list(found)[:4] == ["fold and sort", "fold: phases", "fold: bucket sort", "fold: gather"]
    assert list(found)[6:9] == ["row gate", "coarse stage", "coarse: warp 0's fine rounds"] and found["row gate"] == 9
    assert found["coarse: warp 0's fine rounds"] == 3


def test_a_timing_row_has_the_sm_clock_sampled_over_warm_searches_after_the_timed_ones(smi, monkeypatch):
    from backends.implementations.cpu import CPUBackend
    from datasets import synthetic
    from validation import monitor

    lc = synthetic.simulate(seed=1, preset="k2", ndata=300)
    plan, periods = gpu_timing.backends.make_plan(lc.t, lc.y, lc.dy, period_max=3.0)
    monkeypatch.setenv("SM", "1755")
    searches, sampled_from = [], []
    search = CPUBackend.search
    monkeypatch.setattr(CPUBackend, "search", lambda self, *a, **k: searches.append(1) or search(self, *a, **k))

    class Sampler(monitor.Sampler):
        def __enter__(self):
            sampled_from.append(len(searches))
            return super().__enter__()

    monkeypatch.setattr(gpu_timing.monitor, "Sampler", Sampler)
    *_, gpus = gpu_timing.time_backend("cpu", plan, periods[:50], 2)
    assert sampled_from == [3] and len(searches) > 3  # cold and 2 timed before it; then more, sampled
    busy = gpus["0000:19:00.0"]
    assert busy["samples"] >= 1 and (busy["busy_sm_mhz"], busy["max_sm_mhz"]) == (1755.0, 1980.0)
    assert gpu_timing.clock_text(gpus) == "1755/1980"  # the second GPU has no clocks: left out
    assert gpu_timing.clock_text({}) == ""


def tiny_wheel(folder, version="1.0"):
    """A pure-Python wheel of one module, ``tinywheel``."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"tinywheel-{version}-py3-none-any.whl"
    info = f"tinywheel-{version}.dist-info"
    files = {"tinywheel.py": "X = 1\n",
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tinywheel\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n")
    return path


def test_install_wheels_takes_a_wheel_carried_in_two_folders_once(tmp_path):
    """The device keeps carried folders between calls, so .whl-bench and
    .whl-dask both hold pyyaml's wheel; pip refuses the same wheel twice."""
    first, second = tiny_wheel(tmp_path / "a"), tiny_wheel(tmp_path / "b")
    site = tmp_path / "site"
    script = f"source {ROOT / 'scripts' / 'gpu_env.sh'}; install_wheels {first} {second} && echo \"$PYTHONPATH\""
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], "SITE": str(site), "HOME": str(tmp_path),
                               "PYTHONPATH": os.environ.get("PYTHONPATH", "")})  # where this python finds TLS
    assert done.returncode == 0, done.stderr
    assert (site / "tinywheel.py").read_text() == "X = 1\n"
    assert done.stdout.split(":")[0] == str(site)
    plain = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                            "--target", str(tmp_path / "plain"), str(first), str(second)],
                           capture_output=True, text=True)
    assert plain.returncode != 0  # what the de-duplication spares


def test_the_header_names_the_sources_that_lie_here_whatever_git_says(tmp_path):
    """gpu_header's digest follows an edit in the tree (committed or not) and
    ignores compiled caches, so a call's header tells which sources ran."""
    (tmp_path / "backends" / "cuda").mkdir(parents=True)
    (tmp_path / "backends" / "cuda" / "k.cu").write_text("__global__ void k() {}\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text("print(1)\n")

    def header():
        script = f"source {ROOT / 'scripts' / 'gpu_env.sh'}; COMMIT=abc gpu_header"
        done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path,
                              env={"PATH": os.environ["PATH"]})
        return dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)

    first = header()
    assert first["commit"] == "abc" and len(first["sources"].split()[0]) == 16
    (tmp_path / "backends" / "__pycache__").mkdir()
    (tmp_path / "backends" / "__pycache__" / "x.py").write_text("cached\n")
    (tmp_path / "backends" / "notes.txt").write_text("not a source\n")
    assert header()["sources"] == first["sources"]
    (tmp_path / "backends" / "cuda" / "k.cu").write_text("__global__ void k() { return; }\n")
    assert header()["sources"] != first["sources"]


def test_profile_clocks_read_the_module_of_the_kernel_a_plan_runs():
    """The clock slots profile_pruned reads are those of the module that
    searches the plan, at its shape: tensor's by the kernel the plan takes
    (equal weights: tensor_search; weights that differ: tensor_search_w),
    pruned's pruned_period where the fold fits in shared memory, else its
    global layout's block for the light curve's size."""
    from backends.implementations.pruned import PrunedBackend
    from backends.implementations.pycuda_base import block_size_for
    from backends.implementations.tensor import SHAPES, TensorBackend

    k2, k2w = (gpu_timing.case_plan(case)[0] for case in ("k2", "k2w"))
    assert TensorBackend().search_block(k2) == SHAPES["tensor_search"][0]
    assert TensorBackend().search_block(k2w) == SHAPES["tensor_search_w"][0]
    pruned = PrunedBackend(layout="global")
    assert pruned.search_block(k2) == block_size_for(k2.lc.size)
