"""asv benchmarks of the workbench (``asv.conf.json``; run with ``asv run
--python=same``), the per-GPU variant sweep (``python -m benchmarks.select``)
and the scaling figure (``python -m benchmarks.figure``).

Modules named ``bench_*`` hold the asv benchmarks; the rest are helpers asv
imports but finds no benchmarks in. Nothing here creates a GPU context at
import time.
"""
