"""Atomic on-disk records: JSON-able scalars plus numpy arrays in one ``.npz``.

Written to a temporary file and renamed, so a crash or an interrupt leaves
either the whole record or none; the cache and the run journal both use it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np


def save(path, scalars, arrays=None):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {f"a_{k}": np.asarray(v) for k, v in (arrays or {}).items()}
    payload["scalars"] = np.array(json.dumps(scalars, default=_jsonable))
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **payload)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def load(path):
    """(scalars, arrays) of a record, or None if there is none (or it is unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as f:
            scalars = json.loads(str(f["scalars"]))
            arrays = {k[2:]: f[k] for k in f.files if k.startswith("a_")}
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None
    return scalars, arrays


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot store {type(x).__name__} in a record")
