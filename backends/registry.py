"""Name -> backend class registry, validated at the boundary.

Strict by design: ``get_backend("thrust")`` on a machine that cannot run it
raises ``BackendUnavailable`` naming what is missing; nothing falls back
silently. ``"auto"`` is the one name that chooses, and it says what it chose.
Backend modules are imported only when a backend is asked for, so importing
this package never touches a GPU.
"""

from __future__ import annotations

import functools
import importlib
import logging
import threading
from typing import Dict, Optional, Union

from backends import tls_bridge
from backends.protocol import TLSBackend

log = logging.getLogger("backends")


class BackendUnavailable(RuntimeError):
    """A named backend cannot run on this machine; the message says why."""


_BUILTIN = {
    "cpu": "backends.implementations.cpu:CPUBackend",
    "reference": "backends.implementations.reference:ReferenceBackend",
    "basic": "backends.implementations.basic:BasicBackend",
    "simple": "backends.implementations.simple:SimpleBackend",
    "thrust": "backends.implementations.thrust:ThrustBackend",
    "pruned": "backends.implementations.pruned:PrunedBackend",
    "tensor": "backends.implementations.tensor:TensorBackend",
    "cupy": "backends.implementations.cupy_backend:CuPyBackend",
    "numba": "backends.implementations.numba_cuda:NumbaCUDABackend",
}
_REGISTRY: Dict[str, Union[str, type]] = dict(_BUILTIN)

_KEPT = threading.local()  # .instances: {backend class: this thread's instance}

# ``auto`` takes the first exact one of these that can run here.
AUTO_ORDER = ["pruned", "tensor", "cupy", "numba", "basic", "cpu"]


def register_backend(name: str, backend: Union[str, type], *, override: bool = False) -> None:
    """Register a ``TLSBackend`` subclass (or a lazy ``"module:Class"`` path)."""
    if not isinstance(name, str) or not name or name == "auto":
        raise ValueError(f"invalid backend name {name!r}")
    if name in _REGISTRY and not override:
        raise ValueError(f"backend {name!r} is already registered (pass override=True)")
    if not isinstance(backend, str) and not (
        isinstance(backend, type) and issubclass(backend, TLSBackend)
    ):
        raise TypeError("backend must be a TLSBackend subclass or a 'module:Class' string")
    _REGISTRY[name] = backend
    _register_with_tls(name)


def unregister_backend(name: str) -> None:
    _REGISTRY.pop(name)
    tls_bridge.unregister(name)


def register_with_tls() -> None:
    """Every registered backend also in TLS's registry, as ``bench-<name>``."""
    for name in _REGISTRY:
        _register_with_tls(name)


def _register_with_tls(name: str) -> None:
    tls_bridge.register(name, functools.partial(get_backend, name))


def backend_names():
    return list(_REGISTRY)


def _check_known(name: str) -> None:
    from backends import peers

    if name in peers.peer_names():
        raise ValueError(f"{name!r} is a peer (another package's search, run in a process of its own), "
                         "not a TLS backend: run it with backends.peers.search()")
    if name not in _REGISTRY:
        known = ", ".join(["auto", *_REGISTRY])
        raise ValueError(f"unknown backend {name!r}; known backends: {known}; "
                         f"peers: {', '.join(peers.peer_names())}")


def backend_class(name: str) -> type:
    """The class registered under ``name`` (imports its module)."""
    _check_known(name)
    entry = _REGISTRY[name]
    if isinstance(entry, str):
        module, attr = entry.split(":")
        entry = getattr(importlib.import_module(module), attr)
    return entry


def _why_not(name: str) -> Optional[str]:
    try:
        cls = backend_class(name)
    except ImportError as exc:  # a dependency of the backend module itself
        return f"cannot import backend module: {exc}"
    return cls.missing()


def available_backends() -> Dict[str, Optional[str]]:
    """Every registered backend, then every peer (``backends.peers``) -> None
    if it can run here, else why not."""
    from backends import peers

    return {name: _why_not(name) for name in _REGISTRY} | peers.available()


def available_methods():
    """Names of the TLS backends (not the peers) that can run here."""
    return [name for name in _REGISTRY if _why_not(name) is None]


def resolve(name: str = "auto", plan=None, ndata: Optional[int] = None) -> str:
    """The backend name ``name`` stands for; ``auto`` picks the first runnable
    exact entry of the GPU's variant table (for light curves of ``ndata`` points,
    if given) or ``AUTO_ORDER`` (GPU backends only on a
    real GPU, not the numba CUDA simulator; given a ``plan``, none that
    refuses it) and logs its choice. ``plan`` may be a zero-argument callable:
    it is called once, and only if a candidate can refuse light curves."""
    if name != "auto":
        _check_known(name)
        return name
    from backends.gpu import cuda_device_count
    from backends.variants import auto_order  # measured order for this GPU model, if any

    real_gpu = cuda_device_count() > 0  # never a simulated GPU (NUMBA_ENABLE_CUDASIM) for auto
    built = []

    def refusal(cls):
        if plan is None or cls.refuses is TLSBackend.refuses:
            return None
        if not built:
            built.append(plan() if callable(plan) else plan)
        return cls().refuses(built[0])

    for candidate in auto_order(AUTO_ORDER, ndata=ndata):
        if candidate not in _REGISTRY or _why_not(candidate) is not None:
            continue
        if not backend_class(candidate).exact:  # auto gives TLS's exact statistic
            continue
        if not real_gpu and backend_class(candidate).device == "gpu":
            continue
        if refusal(backend_class(candidate)) is None:
            log.info("backend 'auto' chose %r", candidate)
            return candidate
    raise BackendUnavailable("no backend can run here")  # cpu always can


def get_backend(name: str = "auto", plan=None, ndata: Optional[int] = None) -> TLSBackend:
    """This thread's instance of backend ``name`` (or of the one ``auto``
    chooses for ``plan``), made on first use and kept (``kept_instance``).

    Raises ``ValueError`` for an unknown name and ``BackendUnavailable`` when
    the backend cannot run on this machine.
    """
    if isinstance(name, TLSBackend):
        return name
    name = resolve(name, plan, ndata)
    why = _why_not(name)
    if why is not None:
        raise BackendUnavailable(f"backend {name!r} cannot run here: {why}")
    return kept_instance(backend_class(name))


def kept_instance(cls: type) -> TLSBackend:
    """This thread's instance of ``cls``: a backend's device tables, memory
    pool and kernel handles outlive one search by name (with a fresh instance
    each, ``tensor``'s K2-size search by name took 20.2 ms on an H200, 10.0 ms
    kept). Per thread, as a GPU context is current in one thread;
    ``release_instances`` lets them go."""
    instances = getattr(_KEPT, "instances", None)
    if instances is None:
        instances = _KEPT.instances = {}
    if cls not in instances:
        instances[cls] = cls()
    return instances[cls]


def release_instances() -> None:
    """Let this thread's kept instances (``kept_instance``) and their device memory go."""
    _KEPT.instances = {}
