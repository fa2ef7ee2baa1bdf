"""The per-GPU variant table: which exact backend was fastest on this GPU model.

``python -m benchmarks.select`` measures it and writes
``backends/data/variants/<gpu>.json``, package data, so that an installed
package (not only a checkout) has it; ``backend="auto"`` tries the backends in
the order of the table of the GPU model found here or, with none, of the
nearest model's (``nearest_table``), and in ``registry.AUTO_ORDER``
otherwise; it logs which. The GPU's name comes from the CUDA driver API
(``cuDeviceGetName``), which creates no context.
``TLS_VARIANTS_DIR`` points elsewhere than the package's tables.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from typing import Optional

from backends.gpu import gpu_name

log = logging.getLogger("backends")

DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "variants")


def slug(name: str) -> str:
    """File-name form of a GPU name: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def table_path(name: str, directory: Optional[str] = None) -> str:
    directory = directory or os.environ.get("TLS_VARIANTS_DIR", DEFAULT_DIR)
    return os.path.join(directory, slug(name) + ".json")


def load_table(name: str, directory: Optional[str] = None) -> Optional[dict]:
    """The variant table measured on GPU model ``name``, or None if there is none."""
    path = table_path(name, directory)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        table = json.load(f)
    if table.get("gpu") != name:
        raise ValueError(f"{path} was measured on {table.get('gpu')!r}, not on {name!r}")
    return table


def for_size(table: dict, ndata: int) -> list:
    """Backends by their total time over the table's regimes nearest to
    ``ndata`` (log scale), fastest first; those with a regime unmeasured
    (refused, skipped) are left out. Regimes nobody was timed in (over every
    backend's work budget) are not regimes of the table."""
    rows = [row for row in table.get("regimes") or [] if any(t is not None for t in row["seconds"].values())]
    if not rows:
        return []
    distance = [abs(math.log(row["ndata"] / ndata)) for row in rows]
    closest = min(distance)
    nearest = [row for row, d in zip(rows, distance) if d == closest]
    totals = {}
    for name in nearest[0]["seconds"]:
        times = [row["seconds"].get(name) for row in nearest]
        if all(t is not None for t in times):
            totals[name] = sum(times)
    return sorted(totals, key=totals.get)


def model(name: str) -> Optional[tuple]:
    """(family, number) of a GPU name's model: "NVIDIA H100 80GB HBM3" ->
    ("H", 100), "NVIDIA GH200 480GB" -> ("H", 200) (G: a Grace superchip);
    None without a letter-and-number model ("NVIDIA GeForce RTX 4090")."""
    for word in re.split(r"[\s-]+", name.upper()):
        match = re.fullmatch(r"G?([A-Z])(\d+)[A-Z]*", word)
        if match:
            return match.group(1), int(match.group(2))
    return None


def nearest_table(name: str, directory: Optional[str] = None) -> Optional[dict]:
    """The table of the nearest model to GPU ``name`` among those measured:
    the same model ("NVIDIA H100 NVL" -> "NVIDIA H100 80GB HBM3"), else the same
    family with the nearest model number (an H800 -> the H200's), ties to the
    newer; None when no table is of its family."""
    own = model(name)
    directory = directory or os.environ.get("TLS_VARIANTS_DIR", DEFAULT_DIR)
    if own is None or not os.path.isdir(directory):
        return None
    tables = []
    for file in sorted(os.listdir(directory)):
        if file.endswith(".json"):
            with open(os.path.join(directory, file)) as f:
                table = json.load(f)
            theirs = model(table.get("gpu", ""))
            if theirs is not None and theirs[0] == own[0]:
                tables.append((abs(theirs[1] - own[1]), -theirs[1], table))
    return min(tables, key=lambda entry: entry[:2])[2] if tables else None


def followed_table(gpu: Optional[str] = None, directory: Optional[str] = None) -> Optional[dict]:
    """The variant table ``auto`` follows on GPU ``gpu`` (this one by default):
    its own, else the nearest model's; None: the default order."""
    gpu = gpu_name() if gpu is None else gpu
    if not gpu:
        return None
    return load_table(gpu, directory) or nearest_table(gpu, directory)


def auto_order(default, gpu: Optional[str] = None, directory: Optional[str] = None,
               ndata: Optional[int] = None):
    """``default`` reordered by the variant table of this GPU (or, with none,
    of the nearest model's): given ``ndata``, the backends fastest at that
    light-curve size first (``for_size``), then the table's ranking, then the
    remaining backends in their default order. Logs which table it followed."""
    gpu = gpu_name() if gpu is None else gpu
    if not gpu:
        return list(default)
    table = followed_table(gpu, directory)
    if table is None:
        log.info("backend 'auto': no variant table for %s nor for a GPU of its family; "
                 "default order %s", gpu, ", ".join(default))
        return list(default)
    if table["gpu"] != gpu:
        log.info("backend 'auto': no variant table for %s; following the table of %s, the nearest "
                 "model measured", gpu, table["gpu"])
    ranked = for_size(table, ndata) if ndata else []
    ranked += [name for name in table["ranking"] if name not in ranked]
    log.debug("backend 'auto' order from the variant table of %s: %s", table["gpu"], ranked)
    return ranked + [name for name in default if name not in ranked]
