"""Peak GPU memory of a call, read through NVML with ctypes (no CUDA context,
no framework): device-wide memory in use, sampled every millisecond on a
thread while the call runs, minus what was in use before it started."""

from __future__ import annotations

import ctypes
import threading


class _MemoryInfo(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]


def _used_reader(index: int = 0):
    """A function returning the bytes in use on GPU ``index``."""
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    handle = ctypes.c_void_p()
    if lib.nvmlInit_v2() != 0 or lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
        raise RuntimeError("NVML cannot read GPU memory")
    info = _MemoryInfo()

    def used() -> int:
        lib.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(info))
        return int(info.used)

    return used


def peak_memory(fn, interval: float = 1e-3) -> int:
    """Bytes of GPU memory ``fn()`` added at its peak (CUDA context and
    framework memory pools included: what the call costs a fresh process)."""
    used = _used_reader()
    before = used()
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.wait(interval):
            peak[0] = max(peak[0], used())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        fn()
    finally:
        done.set()
        sampler.join()
    return max(peak[0], used()) - before
