"""Compiled-kernel cache shared by the GPU backends: a bounded, thread-safe LRU
keyed by (variant, block size, device, compile options), so that repeated
searches never recompile, plus the nvcc call that turns a ``backends/cuda``
source into a cubin (any CUDA framework can load the bytes).

Cubins are also kept on disk, as CuPy keeps its kernels, so that a new
process skips nvcc (~1-2 s per kernel): ``$TLS_KERNEL_CACHE_DIR``, default
``~/.cache/tls-workbench/kernels``; the key hashes the nvcc version, the
arguments and every source in ``backends/cuda``, so an edit never reuses a
stale cubin. ``TLS_KERNEL_CACHE_DIR=""`` turns the disk cache off."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from backends.atomic_file import write_atomic
from backends.bounded_cache import BoundedCache as KernelCache  # noqa: F401  (compiled kernels)

CUDA_DIR = Path(__file__).parent / "cuda"


def nvcc_command(source: str, arch: str, defines: dict, options=(), output="out.cubin"):
    """The nvcc command line that compiles ``backends/cuda/<source>`` to a cubin."""
    cmd = ["nvcc", "-cubin", f"-arch={arch}", "-std=c++17", f"-I{CUDA_DIR}", "-o", str(output)]
    cmd += [f"-D{k}={v}" for k, v in sorted(defines.items())]
    cmd += list(options)
    return cmd + [str(CUDA_DIR / source)]


@functools.lru_cache(maxsize=None)
def nvcc_version() -> str:
    return subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout


def cache_dir():
    """The on-disk cubin cache, or None when ``TLS_KERNEL_CACHE_DIR`` is empty."""
    path = os.environ.get("TLS_KERNEL_CACHE_DIR")
    if path is None:
        path = os.path.join(os.path.expanduser("~"), ".cache", "tls-workbench", "kernels")
    return Path(path) if path else None


_digest = ((), "")  # (the sources' folder, names, sizes and modification times; their hash)


def sources_digest() -> str:
    """Hash of every source in ``backends/cuda`` (names and contents): a kernel
    may include any of them, and a compiler's own cache key sees only the one
    it was given. Hashed again only when a source's name, size or modification
    time changes (reading them all took ~0.4 ms, at every ``cupy`` search)."""
    global _digest
    paths = sorted(CUDA_DIR.iterdir())
    infos = [(path.name, path.stat()) for path in paths]
    stamp = (str(CUDA_DIR), *((name, info.st_size, info.st_mtime_ns) for name, info in infos))
    if stamp != _digest[0]:
        digest = hashlib.sha256()
        for path in paths:
            digest.update(path.name.encode() + path.read_bytes())
        _digest = (stamp, digest.hexdigest())
    return _digest[1]


def cubin_key(source: str, arch: str, defines: dict, options=()) -> str:
    return hashlib.sha256(repr((nvcc_version(), source, arch, sorted(defines.items()),
                                list(options), sources_digest())).encode()).hexdigest()


def nvcc_cubin(source: str, arch: str, defines: dict, options=()) -> bytes:
    """The cubin of ``backends/cuda/<source>`` for ``arch`` (e.g. "sm_90"), from
    the disk cache or nvcc. Raises RuntimeError with nvcc's message on failure."""
    directory = cache_dir()
    if directory is None:
        return compile_cubin(source, arch, defines, options)
    path = directory / f"{cubin_key(source, arch, defines, options)}.cubin"
    if path.exists():
        return path.read_bytes()
    cubin = compile_cubin(source, arch, defines, options)
    write_atomic(path, lambda tmp: tmp.write_bytes(cubin))  # other processes read it at once
    return cubin


def compile_cubin(source: str, arch: str, defines: dict, options=()) -> bytes:
    """nvcc's cubin of ``backends/cuda/<source>``; RuntimeError with its message on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "kernel.cubin"
        done = subprocess.run(nvcc_command(source, arch, defines, options, out),
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"nvcc failed on {source}:\n{done.stderr}")
        return out.read_bytes()
