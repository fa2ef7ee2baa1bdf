"""scripts/gpu_timing.py's option sweep (the timing itself needs a GPU)."""

import gpu_timing


def test_sweep_is_every_combination_of_the_options():
    assert gpu_timing.sweep(["prune_min=1,8", "fine_min=16,32,64"]) == [
        {"prune_min": p, "fine_min": f} for p in (1, 8) for f in (16, 32, 64)]
    assert gpu_timing.sweep(["block_size=32,256"]) == [{"block_size": 32}, {"block_size": 256}]
    assert gpu_timing.sweep([]) == []
