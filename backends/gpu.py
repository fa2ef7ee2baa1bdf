"""GPU presence checks that create no CUDA context (driver API cuInit and
cuDeviceGetCount only), shared by the GPU backends' ``missing()``."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import shutil
from typing import Optional


@functools.lru_cache(maxsize=None)
def _driver():
    """The initialised CUDA driver library, or None without a driver."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("cuda") or "libcuda.so.1")
    except OSError:
        return None
    return lib if lib.cuInit(0) == 0 else None


@functools.lru_cache(maxsize=None)
def cuda_device_count() -> int:
    """Number of CUDA devices the driver sees (0 without a driver)."""
    lib, count = _driver(), ctypes.c_int(0)
    if lib is None or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


@functools.lru_cache(maxsize=None)
def gpu_name(index: int = 0) -> Optional[str]:
    """Name of CUDA device ``index`` (e.g. "NVIDIA H100 80GB HBM3"), None without one."""
    lib, device, name = _driver(), ctypes.c_int(0), ctypes.create_string_buffer(256)
    if (lib is None or lib.cuDeviceGet(ctypes.byref(device), index) != 0
            or lib.cuDeviceGetName(name, len(name), device) != 0):
        return None
    return name.value.decode()


@functools.lru_cache(maxsize=None)
def gpu_pci_bus_id(index: int = 0) -> Optional[str]:
    """PCI bus id of CUDA device ``index`` (e.g. "0000:19:00.0"), which tells
    apart GPUs of one model; None without one."""
    lib, device, bus_id = _driver(), ctypes.c_int(0), ctypes.create_string_buffer(32)
    if (lib is None or lib.cuDeviceGet(ctypes.byref(device), index) != 0
            or lib.cuDeviceGetPCIBusId(bus_id, len(bus_id), device) != 0):
        return None
    return bus_id.value.decode()


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


def checked_block_size(block_size, allowed, default=None):
    """``block_size`` if it is one of ``allowed``, ``default`` when it is None;
    a ValueError naming the choices otherwise."""
    if block_size is None:
        return default
    if block_size not in allowed:
        raise ValueError(f"block_size must be one of {tuple(allowed)}, not {block_size!r}")
    return block_size
