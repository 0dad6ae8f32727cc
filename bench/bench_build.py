"""Where the fixed cost of a protocol run goes before the search (issue #26): the stages of
``apps.engine.search.protocol.build_problem`` on ARX's adult data, loaded as
``bench/bench_grid.py``'s worker loads it (the table parsed as strings, the hierarchies
parsed and compiled), then built ``--runs`` times.

    .venv/bin/python bench/bench_build.py [--runs 300] [--serial]

Per stage the median over the runs of the calling thread's CPU time (``thread_time_ns``:
on a busy machine a stage's wall time measures the other processes too), the compiled
kernels (``K ...``) apart from the Python around them, and the whole build in the
thread's and the process's CPU time and in wall time. ``--serial`` codes the columns and
groups the rows in the calling thread (no second thread), so that the stages add up.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ARX = ROOT.parent / "shared" / "data" / "arx"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--serial", action="store_true")
    parser.add_argument("--arx-data", type=Path, default=ARX)
    args = parser.parse_args()

    import apps.engine.frame as frame
    import apps.engine.hierarchies.model as model
    import apps.engine.search.problem as problem
    import apps.engine.search.protocol as protocol
    import apps.engine.textcodes.dictionary as dictionary
    import apps.engine.textcodes.index as index
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search.preload import load_compiled_code
    from bench.grid.data import ADULT_QUASI

    load_compiled_code()
    if args.serial:
        frame.PARALLEL_ROWS = 1 << 62
    spent: dict[str, int] = collections.defaultdict(int)

    def timed(module: ModuleType, name: str, label: str) -> None:
        fn: Callable[..., Any] = getattr(module, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            started = time.thread_time_ns()
            try:
                return fn(*a, **k)
            finally:
                spent[label] += time.thread_time_ns() - started

        setattr(module, name, wrapper)

    stages = [
        (protocol, "encode", "encode"),
        (frame, "code_column", "  a column's codes and dictionary"),
        (dictionary, "text_views", "    its string views"),
        (dictionary, "_code_column", "    K coding, sorting"),
        (frame, "dictionary_series", "  the dictionaries as Series"),
        (frame, "group_rows", "  K distinct rows"),
        (protocol, "_lookups", "look-ups"),
        (model, "find_texts", "  finding the values"),
        (index, "_merge", "    K merge"),
        (index, "_find", "    K hash"),
        (model, "level_maps", "  K level maps"),
        (protocol, "problem_from_encoded", "problem"),
        (problem, "_lookup_arrays", "  the lookups' arrays"),
        (problem, "problem_arrays", "  K frequencies, maps"),
    ]
    for module, name, label in stages:
        timed(module, name, label)
    hierarchies = {
        q: read_arx_csv(args.arx_data / f"adult_hierarchy_{q}.csv", q) for q in ADULT_QUASI
    }
    for hierarchy in hierarchies.values():
        hierarchy.compiled  # noqa: B018 (parsing ends with the hierarchy's arrays)
    data = pl.read_csv(args.arx_data / "adult.csv", separator=";", infer_schema=False).rechunk()
    runs: dict[str, list[float]] = collections.defaultdict(list)
    for run in range(1 + args.runs):
        spent.clear()
        wall, process, thread = (
            time.perf_counter_ns(),
            time.process_time_ns(),
            time.thread_time_ns(),
        )
        protocol.build_problem(protocol.table_encoder(data), ADULT_QUASI, hierarchies)
        spent["whole build (thread CPU)"] = time.thread_time_ns() - thread
        spent["whole build (process CPU)"] = time.process_time_ns() - process
        spent["whole build (wall)"] = time.perf_counter_ns() - wall
        if run:  # (the first is the warm-up)
            for label, ns in spent.items():
                runs[label].append(ns / 1e6)
    mode = "serial" if args.serial else "two threads"
    print(f"adult, {args.runs} builds ({mode}), medians in ms:")
    for label in [label for _, _, label in stages] + [k for k in runs if k.startswith("whole")]:
        print(f"{label:36s} {statistics.median(runs[label] or [0.0]):7.3f}")


if __name__ == "__main__":
    main()
