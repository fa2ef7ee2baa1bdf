"""pruned_period at 512 threads (one block per SM: registers) against 256
threads (two blocks per SM where the fold fits twice): the same 16 warps per
SM, so any difference is one block's barriers and tails left unhidden."""
import sys
sys.path.insert(0, "scripts")
import gpu_timing
import pruned_variants
from backends.implementations.pruned import PrunedBackend

for n in (1800, 2400, 3000):
    gpu_timing.CASES[f"k2n{n}"] = dict(preset="k2", ndata=n)

if __name__ == "__main__":
    if sys.argv[1:2] == ["sizes"]:
        for n in (1800, 2400, 3000):
            plan, periods = gpu_timing.case_plan(f"k2n{n}")
            print(n, len(periods), plan.lc.size + plan.templates.maxwidth,
                  8 * PrunedBackend.shared_doubles(plan, True) / 1024, "KB")
    else:
        pruned_variants.main(sys.argv[1:])
