"""``validation.monitor``: nvidia-smi parsing (a stub on PATH), no nvidia-smi,
and the resident memory of a process tree."""

import os
import subprocess
import sys

from validation import monitor


def test_bus_id_one_spelling():
    assert monitor.bus_id("00000000:3B:00.0") == monitor.bus_id("0000:3b:00.0") == "0000:3b:00.0"


def test_sampler_reads_gpus_and_processes(smi, monkeypatch):
    sampler = monitor.Sampler()
    sampler.sample()
    monkeypatch.setenv("SM", "1500")
    sampler.sample()
    monkeypatch.setenv("UTIL", "0")
    monkeypatch.setenv("SM", "345")  # idle: not the clock a search ran at
    sampler.sample()
    assert sampler.summary() == {
        "0000:19:00.0": {"samples": 3, "mean_util_pct": 100 / 3, "busy_samples": 2, "max_used_mib": 1000.0,
                         "busy_sm_mhz": 1740.0, "max_sm_mhz": 1980.0},
        "0000:3b:00.0": {"samples": 3, "mean_util_pct": 0.0, "busy_samples": 0, "max_used_mib": 500.0,
                         "busy_sm_mhz": None, "max_sm_mhz": None}}
    assert sampler.apps == {4242: {"bus_id": "0000:3b:00.0", "used_mib": 600.0}}


def test_sampler_without_nvidia_smi(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with monitor.Sampler(interval=0.01) as sampler:
        pass
    assert sampler.summary() == {} and sampler.apps == {}
    assert sampler.host_peak_mib() > 10  # this process, sampled once at the end at least


def test_host_memory_counts_the_children_and_a_gone_process_is_zero():
    code = "import sys, time; x = b'1' * (300 * 2**20); print('ready', flush=True); time.sleep(60)"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:
        try:
            assert child.stdout.readline() == "ready\n"  # its 300 MiB are written, so resident
            assert monitor.tree_rss(child.pid) > 300 * 2**20
            assert monitor.tree_rss(os.getpid()) > monitor.tree_rss(child.pid)  # this process and its child
        finally:
            child.kill()
    assert monitor.tree_rss(child.pid) == 0
    assert monitor.Sampler().host_peak_mib() is None
