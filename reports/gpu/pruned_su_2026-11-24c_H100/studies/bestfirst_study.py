"""Exact MACs if each width's survivors were evaluated best-first (descending bound),
stopping once the bound falls below the running best gain (cpu backend, patched)."""
import sys, types, time
import numpy as np
sys.path.insert(0, "scripts")
from backends.implementations import cpu as cpu_mod
from gpu_timing import case_plan

src = open(cpu_mod.__file__).read().replace("cache=True", "cache=False")
old_loop = """        survivors = 0
        for q in range(queued):"""
assert old_loop in src
src = src.replace(old_loop, """        survivors = 0
        ubs = np.full(queued, np.inf)
        for q in range(queued):""")
old_ub = """                if ub < floor:"""
assert old_ub in src
src = src.replace(old_ub, """                ubs[survivors] = ub
                if ub < floor:""")
old_exact = """        count[FINE_PASS] += survivors
        count[EXACT_MACS] += survivors * length
        exact_gains(gains, queue, ks, survivors, aa, rw, fw, a2u)
        for q in range(survivors):
            if gains[q] > best_gain:
                best_gain, best_index, best_depth = gains[q], wi, 1.0 - qbox[q] * overshoot[wi]"""
assert old_exact in src
src = src.replace(old_exact, """        count[FINE_PASS] += survivors
        exact_gains(gains, queue, ks, survivors, aa, rw, fw, a2u)
        if MODE[0] == 0:
            count[EXACT_MACS] += survivors * length
        else:
            order_ = np.argsort(-ubs[:survivors], kind="mergesort")
            running = max(threshold, best_gain) if MODE[0] == 1 else threshold
            for o in order_:
                if ubs[o] < running - pad * running:
                    continue
                count[EXACT_MACS] += length
                if gains[o] > running:
                    running = gains[o]
        for q in range(survivors):
            if gains[q] > best_gain:
                best_gain, best_index, best_depth = gains[q], wi, 1.0 - qbox[q] * overshoot[wi]""")
case = sys.argv[1]
plan, periods = case_plan(case)
periods = np.asarray(periods)[::int(sys.argv[2])]
for mode in (0, 1, 2):
    mod = types.ModuleType("cpu_bf"); sys.modules["cpu_bf"] = mod
    mod.__dict__["MODE"] = np.array([mode]); mod.__file__ = cpu_mod.__file__
    exec(compile(src, "cpu_bf", "exec"), mod.__dict__)
    b = mod.CPUBackend(); b.search(plan, periods)
    w = b.work
    print(case, ["all survivors", "best-first, running best across widths", "best-first within width"][mode],
          "fine_pass", w["fine_pass"], "exact_macs", w["exact_macs"], "seed macs incl.")
