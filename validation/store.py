"""Atomic on-disk records: JSON-able scalars plus numpy arrays in one ``.npz``.

Written to a temporary file and renamed, so a crash or an interrupt leaves
either the whole record or none; the cache and the run journal both use it.
"""

from __future__ import annotations

import json

import numpy as np

from backends.atomic_file import write_atomic


def save(path, scalars, arrays=None):
    payload = {f"a_{k}": np.asarray(v) for k, v in (arrays or {}).items()}
    payload["scalars"] = np.array(json.dumps(scalars, default=_jsonable))

    def write(tmp):
        with open(tmp, "wb") as f:  # a file object: savez would append ".npz" to a name
            np.savez_compressed(f, **payload)

    write_atomic(path, write)


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
