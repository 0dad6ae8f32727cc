"""Loading the compiled code before the clock starts (``search/preload.py``) covers
every specialization of every kernel that a search then uses: in a fresh process, a
search after it adds no compiled signature, so it loads and compiles nothing."""

from __future__ import annotations

import functools
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
from numba.core.registry import CPUDispatcher

from apps.engine.criteria import KAnonymity, StrictAverageRisk
from apps.engine.frame import encode
from apps.engine.loss import METRICS
from apps.engine.search import optimal_search
from apps.engine.search.preload import (
    _tiny_table,
    kernel_modules,
    load_compiled_code,
    load_kernels,
    real_size_table,
)
from apps.engine.search.problem import QuasiLookup, build_problem
from apps.engine.search.protocol import build_problem as build_from
from apps.engine.search.protocol import timed_search

ROOT = Path(__file__).resolve().parents[2]


def _signatures() -> dict[str, set[object]]:
    return {
        f"{module.__name__}.{name}": set(obj.signatures)
        for module in kernel_modules()
        for name, obj in vars(module).items()
        if isinstance(obj, CPUDispatcher)
    }


def _problem(values: int, rows: int, consistent: bool, seed: int) -> object:
    """Three QIs of ``values`` values (four levels each); with ``consistent`` False the
    third QI's level 2 splits a level-1 group (two parents)."""
    rng = np.random.default_rng(seed)
    lookups = []
    for name in ("x", "y", "z"):
        maps = [np.arange(values), np.arange(values) // 3, np.arange(values) // 9]
        if name == "z" and not consistent:
            maps[2] = (np.arange(values) + 1) // 9
        maps.append(np.zeros(values, dtype=np.int64))
        lookups.append(QuasiLookup.from_maps(name, maps))
    codes = [rng.integers(0, values, rows) for _ in range(3)]
    return build_problem(["x", "y", "z"], codes, rng.integers(1, 4, rows), lookups)


def new_signatures_after_preloading() -> list[str]:
    """In this process: load the compiled code, then search problems of every code
    width, consistent or not, with every metric and criterion (and the Pareto front);
    the kernels whose compiled signatures grew meanwhile."""
    load_compiled_code()
    before = _signatures()
    called_from_python = [
        "fetch",
        "roll_up_levels",
        "raise_up_memo",
        "raise_down_memo",
        "climb_chain",
        "rare_rows",
        "raise_by_rare",
        "summarize",
        "loss_suppression_bound",
        "entropy_suppression_bound",
        "entropy_suppression_bounds",
    ]
    loaded = {name.rsplit(".", 1)[1] for name, signatures in before.items() if signatures}
    missing = sorted(set(called_from_python) - loaded)
    if missing:
        return [f"{name} (not loaded)" for name in missing]
    for values in (12, 400, 70_000):
        for consistent in (True, False):
            problem = _problem(values, 300, consistent, seed=values)
            for metric in METRICS:
                for criterion in (KAnonymity(2), KAnonymity(5), StrictAverageRisk(0.2)):
                    result = optimal_search(
                        problem,  # type: ignore[arg-type]
                        criterion,
                        metric=metric,
                        suppression_limit=0.1,
                        pareto=True,
                    )
                    assert result.optimal
    after = _signatures()
    return sorted(name for name in after if after[name] != before[name])


def test_a_search_after_preloading_compiles_nothing() -> None:
    """In a fresh process (earlier tests in this one have called the kernels)."""
    code = (
        "import json; from tests.engine.test_preload import new_signatures_after_preloading"
        " as check; print(json.dumps(check()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def first_search_after_preloading() -> dict[str, int]:
    """In this process: load the compiled code, then time a first search (ARX's protocol:
    encoding to result) of a generated table of the size the load covers, other than the
    load's own (another seed); what that search started: threads, page faults (minor:
    memory new to the process) and compiled signatures."""
    load_compiled_code()
    frame, hierarchies = real_size_table(seed=1)
    before, threads, faults = _signatures(), _threads(), _minor_faults()
    timed_search(frame, list(hierarchies), hierarchies, KAnonymity(5), suppression_limit=0.0)
    after = _signatures()
    return {
        "threads": _threads() - threads,
        "page_faults": _minor_faults() - faults,
        "signatures": sum(len(after[name] - before[name]) for name in after),
    }


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def test_a_first_search_after_preloading_starts_nothing() -> None:
    """A first search of a table of 10,000 rows and 8 quasi-identifiers in a fresh process
    starts no thread, compiles nothing and finds its memory ready: before the load
    searched a table of that size (in each thread) and kept freed memory, it faulted in
    180-660 pages (a search's arena and the encoding threads' first work: memory new to
    the process); now 0-110, mostly under 10. Three processes, their median."""
    code = (
        "import json; from tests.engine.test_preload import first_search_after_preloading"
        " as check; print(json.dumps(check()))"
    )
    found = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        for _ in range(3)
    ]
    assert [f["threads"] for f in found] == [0, 0, 0]
    assert [f["signatures"] for f in found] == [0, 0, 0]
    assert sorted(f["page_faults"] for f in found)[1] < 60, found


def test_after_the_load_a_first_search_size_of_memory_is_faulted_in() -> None:
    """In a fresh process after the load, two blocks of 16 MiB (a search's arena is at least
    that) written through cost no page fault: the load grew the heap and left it written
    and free (``fault_in_heap``). Without it: 1,343-1,727 faults, and on this kernel a
    growth of the heap could take a ~5 ms huge-page fault in a user's first search."""
    code = (
        "import resource, numpy as np; from apps.engine.search.preload import "
        "load_compiled_code; load_compiled_code(); "
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt; "
        "blocks = [np.ones(16 << 20, np.uint8) for _ in range(2)]; "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)"
    )
    faults = [
        int(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        for _ in range(2)
    ]
    assert max(faults) < 50, faults


def test_starting_the_encoding_threads_starts_each_and_runs_on_each() -> None:
    """Every thread of the pool has started on return (quick work handed to the pool
    could leave one unstarted), and each ran the given function once."""
    done = subprocess.run(
        [sys.executable, "-c", _THREADS_CODE], capture_output=True, text=True, cwd=ROOT, check=True
    )
    started, ran, workers = json.loads(done.stdout.strip().splitlines()[-1])
    assert started == workers == min(4, os.cpu_count() or 1)
    assert ran == workers  # (distinct threads)


_THREADS_CODE = """
import json, threading
from apps.engine.workers import encoding_threads, start_encoding_threads
ran = set()
workers = start_encoding_threads(lambda: ran.add(threading.get_ident()))
print(json.dumps([len(encoding_threads()._threads), len(ran), workers]))
"""


def encoding_signatures_after_loading_kernels() -> dict[str, int]:
    """In this process: what a Celery worker process loads (``load_kernels``: no polars
    computation), then encoding and look-ups of tables taking every path of their code
    (short, long and missing values, chunks, a lazy table) and of a real-size table:
    the compiled signatures of encoding and look-ups that grew meanwhile."""
    load_kernels()
    encoding = ("apps.engine.textcodes.", "apps.engine.hierarchies.compiled.")
    before = _signatures()
    frame, hierarchies = _tiny_table()
    for data in (frame, frame.rechunk(), frame.lazy()):
        build_from(functools.partial(encode, data), ["s", "l"], hierarchies)
    table, real = real_size_table(seed=1)
    build_from(functools.partial(encode, table), list(real), real)
    after = _signatures()
    return {
        name: len(after[name] - before[name])
        for name in after
        if name.startswith(encoding) and after[name] != before[name]
    }


def test_a_worker_loads_encoding_code_without_calling_it() -> None:
    """A Celery worker process cannot run polars before it forks its jobs' processes, so
    it loads encoding's and look-ups' code from numba's cache without calling it
    (``load_cached_code``): a job's process then loads none (before, each job's first
    encoding loaded it: 80 ms of a first search of 100 ms on a 10,000-row table)."""
    code = (
        "import json; from tests.engine.test_preload import "
        "encoding_signatures_after_loading_kernels as check; print(json.dumps(check()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}
