"""What the benchmarks' reports say of the machine they ran on: its processor, CPUs and
memory (:func:`machine`), how busy it was (:func:`load_average`), and a process's peak memory
(:func:`peak_mib`). Every report in
docs/bench/ describes its machine with the same line, so figures from two reports can
be told apart by machine at a glance."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path


def machine() -> str:
    """The processor's model name (``lscpu``), the CPUs this process may use (``nproc``)
    and the memory in GiB (``/proc/meminfo``)."""
    model = "unknown processor"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    memory = 0.0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} CPUs (`nproc`), {memory:.1f} GiB RAM"


def software() -> str:
    """The versions of Python, polars and numpy the measured code ran on."""
    import platform

    import numpy as np
    import polars as pl

    return f"Python {platform.python_version()}, polars {pl.__version__}, numpy {np.__version__}"


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as ``a / b / c``."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def peak_mib() -> float:
    """This process's peak resident memory in MiB: VmHWM (``ru_maxrss`` survives exec on
    Linux, so a worker would report the peak of the process that started it), else
    ``ru_maxrss`` where /proc is not there."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
