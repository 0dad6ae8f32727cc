"""Where the fixed cost of a protocol run goes (issue #26): the stages of
``apps.engine.search.protocol.build_problem`` on ARX's adult data (or, with ``--benchmark
DIR --data NAME``, a data set of ARX's benchmark laid out as ``bench/bench_grid.py``'s
``--benchmark`` reads it, every column a quasi-identifier), loaded as that script's worker
loads it (the table parsed as strings, the hierarchies parsed and compiled), then built
``--runs`` times; with ``--search METRIC,K,LIMIT`` each run is a whole protocol run
(``timed_search``: the build, then the search and the solution's figures), and the stages
of the compiled search (``compiled_search.py``) are timed too.

    .venv/bin/python bench/bench_build.py [--runs 300] [--serial]
    .venv/bin/python bench/bench_build.py --benchmark DIR --data fars_subset --search loss,11,0

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
    parser.add_argument(
        "--benchmark", type=Path, help="ARX's benchmark folder (data/, hierarchies/)"
    )
    parser.add_argument("--data", default="adult", help="a data set of --benchmark")
    parser.add_argument("--search", help="METRIC,K,LIMIT: time whole protocol runs")
    args = parser.parse_args()

    import apps.engine.frame as frame
    import apps.engine.hierarchies.model as model
    import apps.engine.search.best_first as best_first
    import apps.engine.search.compiled_search as compiled_search
    import apps.engine.search.problem as problem
    import apps.engine.search.protocol as protocol
    import apps.engine.textcodes.dictionary as dictionary
    import apps.engine.textcodes.index as index
    from apps.engine.criteria import KAnonymity
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search.kernels import frontier, search_state
    from apps.engine.search.preload import load_compiled_code
    from bench.grid.data import ADULT_QUASI

    load_compiled_code()
    if args.serial:
        frame.PARALLEL_ROWS = 1 << 62
        # (the search modules read the bounds' constant as imported)
        for searching in (compiled_search, best_first):
            vars(searching)["PARALLEL_TUPLES"] = 1 << 62
    spent: dict[str, int] = collections.defaultdict(int)

    def timed(module: ModuleType | type, name: str, label: str) -> None:
        fn: Callable[..., Any] = getattr(module, name)

        def wrapper(*a: Any, **k: Any) -> Any:
            started = time.thread_time_ns()
            try:
                return fn(*a, **k)
            finally:
                spent[label] += time.thread_time_ns() - started

        setattr(module, name, wrapper)

    stages: list[tuple[ModuleType | type, str, str]] = [
        (protocol, "encode", "encode"),
        (frame, "code_table", "  the table in one compiled call (below PARALLEL_ROWS)"),
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
    if args.search:
        stages += [
            (protocol, "optimal_search", "search"),
            (compiled_search, "rare_profiles", "  K pairs' rare rows"),
            (compiled_search, "prepare_metric", "  the metric's arrays"),
            (compiled_search, "TableCache", "  the table cache (bottom node)"),
            (search_state, "start", "  K the lattice's arrays (bounds, layout)"),
            (frontier, "queue", "  K the queue"),
            (compiled_search, "solve_slice", "  K the search loop"),
        ]
    for module, name, label in stages:
        timed(module, name, label)
    if args.benchmark is None:
        path, prefix, quasi = (
            args.arx_data / "adult.csv",
            args.arx_data / "adult_hierarchy_",
            ADULT_QUASI,
        )
    else:
        path = args.benchmark / "data" / f"{args.data}.csv"
        base = args.data.removesuffix("_subset")
        prefix = args.benchmark / "hierarchies" / f"{base}_hierarchy_"
        quasi = path.read_text(encoding="utf-8").split("\n", 1)[0].strip().split(";")
    hierarchies = {q: read_arx_csv(f"{prefix}{q}.csv", q) for q in quasi}
    for hierarchy in hierarchies.values():
        hierarchy.compiled  # noqa: B018 (parsing ends with the hierarchy's arrays)
    data = pl.read_csv(path, separator=";", infer_schema=False).rechunk()
    search = args.search.split(",") if args.search else None
    unit = "build" if search is None else "run"
    runs: dict[str, list[float]] = collections.defaultdict(list)
    for run in range(1 + args.runs):
        spent.clear()
        wall, process, thread = (
            time.perf_counter_ns(),
            time.process_time_ns(),
            time.thread_time_ns(),
        )
        if search is None:
            protocol.build_problem(protocol.table_encoder(data), quasi, hierarchies)
        else:
            protocol.timed_search(
                data,
                quasi,
                hierarchies,
                KAnonymity(int(search[1])),
                metric=search[0],
                suppression_limit=float(search[2]),
            )
        spent[f"whole {unit} (thread CPU)"] = time.thread_time_ns() - thread
        spent[f"whole {unit} (process CPU)"] = time.process_time_ns() - process
        spent[f"whole {unit} (wall)"] = time.perf_counter_ns() - wall
        if run:  # (the first is the warm-up)
            for label, ns in spent.items():
                runs[label].append(ns / 1e6)
    mode = "serial" if args.serial else "two threads"
    what = "builds" if search is None else f"protocol runs of {args.search}"
    print(f"{args.data}, {args.runs} {what} ({mode}), medians in ms:")
    for label in [label for _, _, label in stages] + [k for k in runs if k.startswith("whole")]:
        print(f"{label:36s} {statistics.median(runs[label] or [0.0]):7.3f}")


if __name__ == "__main__":
    main()
