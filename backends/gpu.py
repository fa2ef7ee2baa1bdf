"""GPU presence checks that create no CUDA context (driver API cuInit and
cuDeviceGetCount only), shared by the GPU backends' ``missing()``."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import shutil


@functools.lru_cache(maxsize=None)
def cuda_device_count() -> int:
    """Number of CUDA devices the driver sees (0 without a driver)."""
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if lib.cuInit(0) != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def missing_requirements(packages=(), nvcc=False) -> str | None:
    """Why a GPU backend cannot run here: the first missing piece, or None."""
    for package in packages:
        if importlib.util.find_spec(package) is None:
            return f"Python package '{package}' is not installed"
    if nvcc and shutil.which("nvcc") is None:
        return "the CUDA toolkit compiler 'nvcc' is not on PATH"
    if cuda_device_count() == 0:
        return "no CUDA GPU found (no NVIDIA driver or no device visible)"
    return None
