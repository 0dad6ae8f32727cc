"""The scale bench's processes (bench/bench_scale.py): :func:`run_step` starts each step in
a fresh worker process (``bench_scale.py --step``, :func:`worker`), so that its peak memory
(VmHWM) is its own, under a watchdog that samples its resident memory and stops it above
``--max-rss-gib`` or after ``--step-timeout``; the worker prints its time, peak memory and
the step's figures as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.machine import peak_mib
from bench.scale.data import ROOT, step_generate
from bench.scale.steps import step_apply, step_measure, step_profile, step_search, step_upload

#: The command line the worker is started with (``--step``).
ENTRY = ROOT / "bench" / "bench_scale.py"


def worker(args: argparse.Namespace) -> None:
    """Run ``args.step`` in this (fresh) process; prints one JSON line."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deidweb.settings.local")
    # The kernels `make install` compiled (Django's settings point numba there too).
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / "var" / "numba"))
    started = time.perf_counter()
    uploaded = args.work / "uploaded.parquet"
    if args.step == "generate":
        details = step_generate(args.data, args.rows, args.chunk_rows, args.seed)
    elif args.step == "upload":
        details = step_upload(args.data, args.work)
    elif args.step == "profile":
        details = step_profile(uploaded)
    elif args.step == "measure":
        details = step_measure(uploaded, args.work)
    elif args.step == "search":
        details = step_search(args.work)
    else:
        details = step_apply(uploaded, args.work)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mib": peak_mib(), "details": details}))


def _rss_mib(pid: int) -> float:
    """A process's resident memory now (VmRSS), in MiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_step(step: str, args: argparse.Namespace, data: Path, work: Path) -> dict[str, Any]:
    """Run one step in a fresh process, stopped if it exceeds the memory or time budget."""
    command = [
        sys.executable,
        str(ENTRY),
        "--step",
        step,
        "--rows",
        str(args.rows),
        "--chunk-rows",
        str(args.chunk_rows),
        "--seed",
        str(args.seed),
        "--data",
        str(data),
        "--work",
        str(work),
    ]
    limit = args.max_rss_gib * 1024
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    sampled = 0.0
    stopped = ""
    while process.poll() is None:
        sampled = max(sampled, _rss_mib(process.pid))
        if sampled > limit:
            stopped = f"stopped: resident memory above {args.max_rss_gib} GiB"
        elif time.perf_counter() - started > args.step_timeout:
            stopped = f"stopped: longer than {args.step_timeout} s"
        if stopped:
            process.send_signal(signal.SIGKILL)
            process.wait()
            break
        time.sleep(0.2)
    output = process.stdout.read() if process.stdout else ""
    if stopped or process.returncode != 0:
        return {"error": stopped or f"exit status {process.returncode}", "peak_mib": sampled}
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result
