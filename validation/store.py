"""The resumable-run layer: finished work on disk, one whole file per unit.

A record is JSON-able scalars plus numpy arrays in one ``.npz``; a
``RecordDir`` is a folder of them (or of other files, such as Parquet parts),
each written to a temporary file and renamed, so a crash or an interrupt
leaves the whole file or none and a re-run skips what is there. recover's
journal, the CPU TLS cache and validation.batch's results are all one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from backends.atomic_file import write_atomic

RUN_FILE = "_run.json"  # what a folder's run computes; '_' hides it from Parquet readers


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


class RecordDir:
    """A folder of finished work, one file per key; ``stamp`` records what the
    run computes, so that a resumed run never mixes in another configuration's."""

    def __init__(self, directory, suffix=".npz"):
        self.directory, self.suffix = Path(directory), suffix

    def path(self, key) -> Path:
        return self.directory / f"{key}{self.suffix}"

    def keys(self, prefix=""):
        """Keys of the files here (temporary files and the stamp left out)."""
        files = self.directory.glob(f"{prefix}*{self.suffix}")
        return sorted(f.name[:-len(self.suffix)] for f in files if not f.name.startswith((".", "_")))

    def save(self, key, scalars, arrays=None):
        save(self.path(key), scalars, arrays)

    def load(self, key):
        """(scalars, arrays) of record ``key``, or None if there is none (or it is unreadable)."""
        return load(self.path(key))

    def write_file(self, key, write):
        """File ``key`` filled by ``write(tmp)``, atomically (``write_atomic``)."""
        write_atomic(self.path(key), write)

    def stamp(self, identity: dict):
        """Record ``identity`` (JSON-able) as what this folder holds, or, on a
        re-run, ValueError unless it is what the folder holds already."""
        record = self.directory / RUN_FILE
        if record.exists():
            before = json.loads(record.read_text())
            if before != json.loads(json.dumps(identity)):
                raise ValueError(f"{self.directory} holds results of {before}, not {identity}: "
                                 "use another --out, or delete it to start over")
            return
        write_atomic(record, lambda tmp: tmp.write_text(json.dumps(identity)))

    def clear(self):
        shutil.rmtree(self.directory, ignore_errors=True)


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(f"cannot store {type(x).__name__} in a record")
