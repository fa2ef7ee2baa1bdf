"""scripts/gpu_timing.py's option sweep and scripts/gpu_aba.sh's refusal
without the parent's tree (the timing itself needs a GPU)."""

import subprocess
from pathlib import Path

import gpu_timing

ROOT = Path(__file__).resolve().parents[1]


def test_sweep_is_every_combination_of_the_options():
    assert gpu_timing.sweep(["prune_min=1,8", "fine_min=16,32,64"]) == [
        {"prune_min": p, "fine_min": f} for p in (1, 8) for f in (16, 32, 64)]
    assert gpu_timing.sweep(["block_size=32,256"]) == [{"block_size": 32}, {"block_size": 256}]
    assert gpu_timing.sweep([]) == []


def test_aba_without_the_parents_tree_says_how_to_make_it_and_fails(tmp_path):
    (tmp_path / "scripts").mkdir()
    done = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_aba.sh")], cwd=tmp_path, capture_output=True,
                          text=True, env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")})
    assert done.returncode == 1 and "no _ab here" in done.stdout
    assert not (tmp_path / "out").exists()  # nothing timed, nothing written
