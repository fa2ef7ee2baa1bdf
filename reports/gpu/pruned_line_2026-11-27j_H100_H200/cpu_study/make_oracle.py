"""Writes cpu_oracle.py beside this file: backends/implementations/cpu.py with
a per-period ``forced`` threshold (the period's exact optimum, for
oracle_floor.py), uncached. As run on 2026-11-27 at c65807f."""
from pathlib import Path

here = Path(__file__).resolve().parent
s = (here.parents[3] / "backends/implementations/cpu.py").read_text()
for old, new in [
    ("cache=True", "cache=False"),
    ("""                amax, lines, tuning, debug, count, work, queue, listed, listed_box, starts, block,
                gathered):""", """                amax, lines, tuning, debug, count, work, queue, listed, listed_box, starts, block,
                gathered, forced):"""),
    ("""    count[DEPTH_PASS] += starts[hi - lo]
    floor = threshold - pad * threshold""", """    count[DEPTH_PASS] += starts[hi - lo]
    if forced > 0.0:
        threshold = forced
    floor = threshold - pad * threshold"""),
    ("rho, rho2, mean, sum_a2, amax, lines, tuning, debug, threads, walk, listed_max):",
     "rho, rho2, mean, sum_a2, amax, lines, tuning, debug, threads, walk, listed_max, forced):"),
    ("""                block, gathered)
    return gain""", """                block, gathered, forced[p])
    return gain"""),
]:
    assert s.count(old) >= 1, old[:50]
    s = s.replace(old, new)
(here / "cpu_oracle.py").write_text(s)
