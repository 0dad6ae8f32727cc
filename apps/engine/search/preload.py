"""Load the search's compiled code before the first search is timed (and a job runs).

The kernels (``search/kernels/``, ``loss/kernels.py``, ``textcodes/``, the hierarchies'
and the lattice's compiled passes) are compiled by numba and cached on disk; a process
loads each one's machine code the first time it is called with a given code width
(``uint8``, ``uint16``, ``uint32``: :func:`~problem.code_dtype`), and polars pays for the
first call of each function it runs. :func:`load_compiled_code` pays all of that at once,
like importing an extension module: the ``search`` command and the benchmark call it
before they start their clocks, and a Celery worker when it starts (``deidweb/celery.py``),
so that no user's first search pays it.

It encodes, looks up and searches a tiny table (short, long and missing values, in two
chunks, in memory and streamed), then runs a real search on tiny generated problems for
every code width and every metric, with and without suppression, and each metric's
compiled bound: the calls have exactly the argument types of real searches, so every
specialization a search uses is loaded (or, in the first process after an install,
compiled and written to the cache). ``tests/engine/test_preload.py`` checks that a
search afterwards adds no compiled signature.

A first search pays more than loading code: the threads that encode columns start when
first handed work, and memory of a real table's size is new to the process (a search's
arena, about 26 MB on a table of 10,000 rows and 8 quasi-identifiers: the C allocator
maps it afresh, and the kernel faults its pages in, for huge pages after compacting
memory), in the calling thread and in the encoding threads. Measured on ARX's
fars_subset (10,093 rows, 8 quasi-identifiers) in a fresh process, the first run's
search took 3.3 ms of thread time against 0.5 ms in the second run, with 190 page faults
against none, and the second encoding thread started during the run. So the load also
has the allocator keep freed memory (:func:`keep_freed_memory`), starts every encoding
thread (:func:`~apps.engine.workers.start_encoding_threads`) and searches a generated
table of that size (:func:`real_size_table`, seeded: nothing of a user's data) in this
thread and in each encoding thread (:func:`real_size_searches`). What the process keeps
is the allocator's heap, holding no data (as a JVM keeps its heap); a first search of a
table up to that size reuses it. This costs the load about 100 ms (930 -> 1,050 ms) and
24 MB of memory. Last, the load grows the heap by 48 MB, written, and frees it
(:func:`fault_in_heap`): a first search's arena then grows no heap, whose new top's
huge-page fault took about 5 ms in some processes.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
from types import ModuleType
from typing import Any

import numpy as np
import polars as pl
from numba.core.registry import CPUDispatcher

from apps.engine import lattice, textcodes
from apps.engine.criteria import KAnonymity
from apps.engine.frame import encode
from apps.engine.hierarchies import Hierarchy, compiled, hierarchy_from_rows
from apps.engine.hierarchies import lookups as lookup_kernels
from apps.engine.loss import METRICS, NodeClasses, prepare_metric, table_kernels
from apps.engine.loss import kernels as loss_kernels
from apps.engine.search.classes import base_table
from apps.engine.search.kernels import MODULES
from apps.engine.search.optimal import optimal_search
from apps.engine.search.problem import (
    QuasiLookup,
    SearchProblem,
    build_problem,
)
from apps.engine.search.protocol import build_problem as build_from
from apps.engine.search.sensitive import sensitive_table
from apps.engine.sensitive import kernels as sensitive_kernels
from apps.engine.sensitive import parse_model, sensitive_column
from apps.engine.workers import start_encoding_threads

#: Values per quasi-identifier that give each code width (uint8, uint16, uint32).
_WIDTHS = (4, 300, 70_000)


def _tiny_problem(values: int) -> SearchProblem:
    """Two QIs of ``values`` values, three levels each (identity, pairs, all; consistent
    hierarchies), eight tuples."""
    maps = (np.arange(values), np.arange(values) // 2, np.zeros(values, dtype=np.int64))
    lookups = [QuasiLookup.from_maps(name, maps) for name in ("a", "b")]
    codes = [np.arange(8) % values, (np.arange(8) * 3) % values]
    return build_problem(["a", "b"], codes, np.arange(1, 9), lookups)


def kernel_modules() -> list[ModuleType]:
    """Every module of the engine holding compiled functions."""
    return [
        *(importlib.import_module(f"apps.engine.textcodes.{name}") for name in textcodes.MODULES),
        compiled,
        lookup_kernels,
        lattice,
        *(importlib.import_module(f"apps.engine.search.kernels.{name}") for name in MODULES),
        loss_kernels,
        table_kernels,
        sensitive_kernels,
    ]


def _tiny_table() -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    """A table in two chunks whose columns hold short values, long ones (past the 12
    bytes of a string view) and missing ones, with a hierarchy each: encoding and
    look-ups take every path of their compiled code."""
    short = ["a", "b", None, "a", "c", "b"]
    long = ["a value of more than twelve bytes", "short", None, "short", "x" * 40, "short"]
    frame = pl.concat(
        [
            pl.DataFrame({"s": short[:3], "l": long[:3]}),
            pl.DataFrame({"s": short[3:], "l": long[3:]}),
        ],
        rechunk=False,
    )
    hierarchies = {
        "s": hierarchy_from_rows("s", [["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]]),
        "l": hierarchy_from_rows(
            "l",
            [
                ["a value of more than twelve bytes", "long", "*"],
                ["x" * 40, "long", "*"],
                ["short", "a short group of values", "*"],
            ],
        ),
    }
    return frame, hierarchies


def _encode_and_search() -> None:
    """Encode the tiny table (a table in memory, then the same streamed), look its values
    up and search it: the compiled code of encoding and look-ups, and the first calls of
    polars' functions they use."""
    frame, hierarchies = _tiny_table()
    start_encoding_threads()  # (the threads that code columns side by side, all started now)
    for data in (frame, frame.rechunk(), frame.lazy()):
        # (as a protocol run does: the dictionaries' views kept by the encoding in memory)
        built = build_from(functools.partial(encode, data), ["s", "l"], hierarchies)
        optimal_search(built.problem, KAnonymity(2), suppression_limit=0.5)


#: The generated table of :func:`real_size_table`: rows, and each column's values (a table
#: of ordinary size: 8 columns of 2 to 200 values, most of its rows distinct).
REAL_ROWS, REAL_VALUES = 10_000, (2, 5, 10, 20, 40, 80, 120, 200)


def real_size_table(seed: int = 0) -> tuple[pl.DataFrame, dict[str, Hierarchy]]:
    """A generated table of the size of a real one (:data:`REAL_ROWS`; columns of
    :data:`REAL_VALUES` values, skewed as real columns are) with a four-level hierarchy
    per column, compiled (as read: ``Hierarchy.compiled``); seeded."""
    rng = np.random.default_rng(seed)
    columns, hierarchies = {}, {}
    for j, n in enumerate(REAL_VALUES):
        name = f"q{j}"
        values = [f"{name} value {i}" for i in range(n)]
        picked = np.minimum((rng.pareto(1.5, REAL_ROWS) * n / 8).astype(np.int64), n - 1)
        columns[name] = pl.Series(name, values).gather(picked)
        rows = [[v, f"group {i // 4}", f"set {i // 16}", "*"] for i, v in enumerate(values)]
        hierarchies[name] = hierarchy_from_rows(name, rows)
        hierarchies[name].compiled  # noqa: B018 (compiled when read, as `deid search` does)
    return pl.DataFrame(columns), hierarchies


#: glibc's ``mallopt`` parameters (malloc.h) and the values :func:`keep_freed_memory` sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
KEPT_BYTES, MAPPED_FROM_BYTES = 64 << 20, 32 << 20


def keep_freed_memory() -> bool:
    """Have the C allocator keep up to :data:`KEPT_BYTES` of freed memory for the next
    allocations instead of handing it back to the system, serve blocks below
    :data:`MAPPED_FROM_BYTES` from it instead of mapping each afresh (glibc's default
    moves both thresholds with the blocks freed, so whether a search's memory was kept
    for the next depended on where it lay), and from one heap for all threads (work
    handed to the encoding threads allocates there too). Holds no data: memory a search
    freed, reused by the next without faulting its pages in again. False where the C
    library is not glibc."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    return bool(
        mallopt(_M_TRIM_THRESHOLD, KEPT_BYTES)
        and mallopt(_M_MMAP_THRESHOLD, MAPPED_FROM_BYTES)
        and mallopt(_M_ARENA_MAX, 1)
    )


#: What :func:`fault_in_heap` grows the heap by, in blocks of the second size (each below
#: :data:`MAPPED_FROM_BYTES`: served from the heap); the total within :data:`KEPT_BYTES`.
FAULTED_BYTES, FAULTED_BLOCK = 48 << 20, 16 << 20


def fault_in_heap() -> None:
    """Grow the C heap by :data:`FAULTED_BYTES` now, every page written, then free it: the
    allocator keeps it (:func:`keep_freed_memory`) and a first search's arena and arrays
    come from memory already faulted in. Growing the heap costs a page fault at its new
    top, and numpy advises transparent huge pages for its blocks of 4 MiB and more, the
    heap's too: on a kernel that compacts memory for such a fault (``defrag=madvise``),
    one fault took about 5 ms of the thread's own CPU. Measured on a fresh `deid search`
    process's first search of adult_subset (3,016 rows): such a stall in 2 of 14
    processes (a 0.5 ms search took 5.1 ms), none in 14 with the heap faulted in at load
    (cup_subset: 2 of 8, none of 8). The cost: a `deid search` process's first search of
    adult_subset, discernibility k = 20, took 1.9-2.2 ms in 20 processes against
    1.2-2.1 ms, and 6.2 ms in 1 of 10, without (with 16 MB: 4 stalls in 10; with 32 MB:
    none in 10, 1.5-2.1 ms); the protocol's later runs are unchanged (0.74 ms either
    way). Call only after :func:`keep_freed_memory` held."""
    blocks = [np.ones(FAULTED_BLOCK, dtype=np.uint8) for _ in range(FAULTED_BYTES // FAULTED_BLOCK)]
    del blocks


#: The searches of :func:`real_size_searches`: (metric, suppression limit).
REAL_SEARCHES = (("precision", 0.0), ("loss", 0.05))


def real_size_searches(searches: int = len(REAL_SEARCHES)) -> None:
    """The first ``searches`` of :data:`REAL_SEARCHES` on :func:`real_size_table` (k = 5;
    the first grows the allocator's heap to a search's size and faults its pages in,
    the next find it as a user's search will), then dropped."""
    frame, hierarchies = real_size_table()
    for metric, limit in REAL_SEARCHES[:searches]:
        built = build_from(functools.partial(encode, frame), list(hierarchies), hierarchies)
        optimal_search(built.problem, KAnonymity(5), metric=metric, suppression_limit=limit)


def _searches_of_width(values: int) -> None:
    """Every metric's search, bounds and values on a tiny problem of one code width."""
    problem = _tiny_problem(values)
    for metric in METRICS:
        for limit in (0.0, 0.5):
            optimal_search(problem, KAnonymity(3), metric=metric, suppression_limit=limit)
        # (the Python search: with suppression every metric's search without a front is
        # compiled, the front's is not)
        optimal_search(problem, KAnonymity(3), metric=metric, suppression_limit=0.5, pareto=True)
        # (the metrics' compiled bounds and values with suppressed classes, which so
        # small a search may not reach)
        prepared = prepare_metric(metric, problem)
        prepared.suppression_bound((1, 1), 1, 3)
        bottom = base_table(problem)
        some = bottom.sizes < bottom.sizes.max()  # (at least one class suppressed)
        prepared.value(NodeClasses(bottom.levels, bottom.columns, bottom.sizes, some))


def _sensitive_of_width(values: int) -> None:
    """A search judging classes by sensitive-attribute models, one code width."""
    problem = _tiny_problem(values)
    column = sensitive_column("s", ["1", "2", "3"], np.array([3, 3, 2]))
    models = [parse_model("s", spec) for spec in ("distinct-l=2", "equal-t=0.5")]
    codes = [*problem.codes, np.arange(len(problem.counts)) % 3]
    table = sensitive_table(problem, codes, problem.counts, [column], models)
    optimal_search(problem, KAnonymity(2), suppression_limit=0.5, sensitive=table)


@functools.cache
def load_compiled_code() -> None:
    """Load (or compile) every compiled kernel a search uses; once per process."""
    kept = keep_freed_memory()  # (before the encoding threads start: they share its heap)
    _encode_and_search()
    for values in _WIDTHS:
        _searches_of_width(values)
    real_size_searches()
    # (and on each encoding thread, the search without suppression (9 ms; with, 40 ms): a
    # search hands them work, which a thread doing it for the first time paid for, 30-440
    # page faults of its own)
    start_encoding_threads(functools.partial(real_size_searches, 1))
    if kept:
        fault_in_heap()


@functools.cache
def load_kernels() -> None:
    """Load the search's compiled kernels (every code width and metric, and the judging by
    sensitive-attribute models) on generated arrays, without a polars computation or a
    thread: what a process that forks others may load (``apps/jobs/isolation.py``: a
    forked process cannot use a thread pool its parent started). Encoding and look-ups,
    which need polars to be called, are loaded from numba's cache without a call
    (:func:`load_cached_code`)."""
    for values in _WIDTHS:
        _searches_of_width(values)
    load_sensitive_code()
    load_cached_code(_encoding_modules())


def _encoding_modules() -> list[ModuleType]:
    """The modules of encoding's and look-ups' compiled functions."""
    return [
        *(importlib.import_module(f"apps.engine.textcodes.{name}") for name in textcodes.MODULES),
        compiled,
        lookup_kernels,
    ]


def load_cached_code(modules: list[ModuleType]) -> int:
    """Load every specialization numba's on-disk cache holds for the kernels of
    ``modules`` without calling them, so without polars or a thread: a Celery
    worker process loads encoding's and look-ups' code this way, and each job it forks
    has it (measured: a job's first search of a 10,000-row table, forked from a worker,
    took 100 ms, encoding 80 ms and look-ups 9.5 ms; with this 52 ms, 41 ms and 0.8 ms; the
    rest is polars starting its threads in the job's process). The number of
    specializations in the cache (numba's cache index, an internal of numba: none read
    when it differs)."""
    found = 0
    for module in modules:
        for kernel in vars(module).values():
            if not isinstance(kernel, CPUDispatcher):
                continue
            cache: Any = getattr(kernel, "_cache", None)
            try:
                index = cache._cache_file._load_index()
            except AttributeError:  # (another numba's internals, or not cached)
                continue
            for key in index:
                kernel.compile(key[0])  # (the signature: loaded from the cache)
                found += 1
    return found


@functools.cache
def load_sensitive_code() -> None:
    """Load the compiled judging of classes by sensitive-attribute models (every code
    width; ``sensitive/kernels.py``), for searches that use them; once per process."""
    for values in _WIDTHS:
        _sensitive_of_width(values)
