"""What a run uses, sampled on a thread while it runs: each GPU's busy share,
memory and SM clock and the GPU of each process holding a context (``nvidia-smi``),
and the resident memory of a process and all its children (a Dask run's
workers). Without nvidia-smi the GPUs are left out."""

from __future__ import annotations

import os
import subprocess
import threading
from typing import NamedTuple, Optional

import numpy as np

SMI_GPUS = ["nvidia-smi", "--query-gpu=pci.bus_id,utilization.gpu,memory.used,clocks.sm,clocks.max.sm",
            "--format=csv,noheader,nounits"]
SMI_APPS = ["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id,used_memory",
            "--format=csv,noheader,nounits"]


def bus_id(text):
    """A PCI bus id in one spelling: nvidia-smi's 00000000:19:00.0 and CUDA's 0000:19:00.0 alike."""
    domain, bus, rest = text.strip().lower().split(":")
    return f"{int(domain, 16):04x}:{bus}:{rest}"


def number(text):
    """nvidia-smi's number, None where it has none ("[N/A]", "[Not Supported]")."""
    try:
        return float(text)
    except ValueError:
        return None


def csv_rows(lines):
    return [[field.strip() for field in line.split(",")] for line in lines.splitlines() if line.strip()]


def median(values):
    """Median of the values that are not None (None if none are)."""
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def tree_rss(pid) -> int:
    """Resident bytes of process ``pid`` and all its descendants (0 once it is gone)."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:  # ended between the listing and the reading
            pass
    return total


class GPUSample(NamedTuple):
    util_pct: float
    used_mib: float
    sm_mhz: Optional[float]  # None where nvidia-smi gives no clock
    max_sm_mhz: Optional[float]


class Sampler:
    """Samples every ``interval`` s on a thread while the block runs: per GPU
    its busy share, peak memory and SM clock, per process its GPU, and the peak
    resident memory of process ``pid``'s tree (default: this process's)."""

    def __init__(self, interval=1.0, pid=None):
        self.interval, self.pid = interval, os.getpid() if pid is None else pid
        self.gpus, self.apps, self.host = {}, {}, []
        self._done = threading.Event()

    def sample(self):
        self.host.append(tree_rss(self.pid))
        try:
            gpus, apps = (subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
                          for cmd in (SMI_GPUS, SMI_APPS))
        except (OSError, subprocess.TimeoutExpired):
            return
        for bus, util, used, *clocks in csv_rows(gpus):
            sm, sm_max = (number(c) for c in (clocks + ["", ""])[:2])
            self.gpus.setdefault(bus_id(bus), []).append(GPUSample(float(util), float(used), sm, sm_max))
        for pid, bus, used in csv_rows(apps):
            self.apps[int(pid)] = {"bus_id": bus_id(bus), "used_mib": float(used)}

    def summary(self):
        """Per GPU (PCI bus id): samples, mean busy share [%], busy samples, peak
        memory [MiB], and the SM clock's median over the busy samples and its
        maximum [MHz] (None where nvidia-smi gives none): a GPU below its
        maximum clock runs the same kernel slower."""
        return {bus: {"samples": len(s), "mean_util_pct": float(np.mean([x.util_pct for x in s])),
                      "busy_samples": sum(x.util_pct > 0 for x in s),
                      "max_used_mib": max(x.used_mib for x in s),
                      "busy_sm_mhz": median([x.sm_mhz for x in s if x.util_pct > 0]),
                      "max_sm_mhz": median([x.max_sm_mhz for x in s])} for bus, s in sorted(self.gpus.items())}

    def host_peak_mib(self):
        """Peak resident memory of the process tree [MiB] (None before any sample)."""
        return max(self.host) / 2**20 if self.host else None

    def _loop(self):
        while not self._done.wait(self.interval):
            self.sample()

    def __enter__(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()
        self.sample()  # at least one sample, the last state
