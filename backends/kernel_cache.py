"""Compiled-kernel cache shared by the GPU backends: a bounded, thread-safe LRU
keyed by (variant, block size, device, compile options), so that repeated
searches never recompile, plus the nvcc call that turns a ``backends/cuda``
source into a cubin (any CUDA framework can load the bytes)."""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Hashable

CUDA_DIR = Path(__file__).parent / "cuda"


class KernelCache:
    """Bounded LRU of built kernels. ``get(key, build)`` returns the cached
    value or calls ``build()`` once, under the lock, so concurrent callers of
    one key never build twice; ``builds`` counts the calls to ``build``."""

    def __init__(self, maxsize: int = 32):
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.maxsize = maxsize
        self.builds = 0
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], object]):
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            value = build()
            self.builds += 1
            self._entries[key] = value
            if len(self._entries) > self.maxsize:
                self._entries.popitem(last=False)
            return value

    def __len__(self):
        with self._lock:
            return len(self._entries)

    def __contains__(self, key):
        with self._lock:
            return key in self._entries

    def clear(self):
        with self._lock:
            self._entries.clear()


def nvcc_command(source: str, arch: str, defines: dict, options=(), output="out.cubin"):
    """The nvcc command line that compiles ``backends/cuda/<source>`` to a cubin."""
    cmd = ["nvcc", "-cubin", f"-arch={arch}", "-std=c++17", f"-I{CUDA_DIR}", "-o", str(output)]
    cmd += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    cmd += list(options)
    return cmd + [str(CUDA_DIR / source)]


def nvcc_cubin(source: str, arch: str, defines: dict, options=()) -> bytes:
    """Compile ``backends/cuda/<source>`` for ``arch`` (e.g. "sm_90"); returns
    the cubin. Raises RuntimeError with nvcc's message on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kernel.cubin"
        done = subprocess.run(nvcc_command(source, arch, defines, options, out),
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"nvcc failed on {source}:\n{done.stderr}")
        return out.read_bytes()
