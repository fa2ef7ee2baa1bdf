"""Light curves from ``.npz`` files (``time``, ``flux``, optional ``flux_err``),
read in a process of their own.

Reading an ``.npz`` is ~0.6 ms of interpreted numpy and zipfile code a K2-like
file. In a search's process it takes the GIL from the host's part of the
search, which keeps a GPU fed: one H200 worker searched 303 curves/s reading
in a thread, 334/s with a reader process and 340/s with every file read
beforehand (reports/gpu/survey_reads_2026-12-03_H200). ``Reader`` keeps one
spawned child for that, which dies with its parent (``backends.child_processes``).
The child imports the ``backends`` package (~1.2 s and ~160 MB, once); a file
it cannot read comes back as that light curve's ``BatchError``.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
import zipfile
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

import numpy as np

from backends.batch import BatchError
from backends.child_processes import serve_parent

CHUNK = 16  # files a round trip to the reader


def load_npz(curve_id, path):
    """A ``search_batch`` item from one ``.npz`` (``time``, ``flux``, ``flux_err``);
    ValueError naming the file when it is not one (numpy would speak of pickled data)."""
    try:
        data = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} is not a readable .npz archive (corrupt, truncated or another "
                         f"format: {type(exc).__name__})") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} holds one array (.npy), not an .npz of time, flux and flux_err")
    with data as f:
        missing = [k for k in ("time", "flux") if k not in f.files]
        if missing:
            raise ValueError(f"{path} has no {' or '.join(missing)} array "
                             f"(needs time, flux and optionally flux_err; has {f.files})")
        try:
            return {"id": curve_id, "time": f["time"], "flux": f["flux"],
                    "flux_err": f["flux_err"] if "flux_err" in f.files else None}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: a corrupt array in the .npz archive ({exc})") from None


def read(curve_id, path):
    """``load_npz``'s item, or the ``BatchError`` of a file it fails on (that light curve's error)."""
    try:
        return load_npz(curve_id, path)
    except Exception as exc:
        return BatchError(curve_id, type(exc).__name__, str(exc))


class Reader:
    """``read`` (or ``reader``, a module-level function) of files, in a spawned
    child process (started at the first ``items``, kept for the next) or in the
    calling thread. A daemonic process (a Dask worker made without
    ``distributed.worker.daemon: False``) may not start children: it reads in
    the calling thread, and says so once."""

    def __init__(self, reader=read):
        self.reader, self._pool, self._warned = reader, None, False

    def items(self, files, here=False):
        """``reader(id, path)`` of each of ``files`` (id -> path), in order, as they
        come: in the child process, or with ``here`` in the calling thread."""
        if not here and multiprocessing.current_process().daemon:
            if not self._warned:
                warnings.warn("this process is daemonic and may not start a reader process: files are read in "
                              "the searching process (set distributed.worker.daemon to False)", stacklevel=2)
                self._warned = True
            here = True
        return map(self.reader, files.keys(), files.values()) if here else self._mapped(files)

    def _mapped(self, files):
        if not files:
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=serve_parent, initargs=(os.getpid(),))
        try:
            yield from self._pool.map(self.reader, files.keys(), files.values(), chunksize=CHUNK)
        except BrokenProcessPool:
            self.close()  # the next call starts another
            raise

    def close(self):
        """End the child process, if any."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
