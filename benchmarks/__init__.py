"""asv benchmarks of the workbench (``asv.conf.json``; run with ``asv run
--python=same``), the per-GPU variant sweep (``python -m benchmarks.select``)
and the scaling figure (``python -m benchmarks.figure``).

Modules named ``bench_*`` hold the asv benchmarks; the rest are helpers asv
imports but finds no benchmarks in. Nothing here creates a GPU context at
import time.
"""

import os
import sys

# asv imports this package from the checkout with a clean environment
# (no PYTHONPATH) and the project need not be installed: make ``backends``
# and ``datasets`` importable from the checkout.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)
