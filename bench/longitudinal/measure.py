"""The longitudinal benchmark's cases (bench/bench_longitudinal.py): what each measures
(the levels of the measure cases, the search's k and power, the subset budget) and how:
:func:`run_case` starts each case in a fresh worker process (``bench_longitudinal.py
--worker``, :func:`worker`), so that its peak resident memory (VmHWM) is its own, input
included; a case that fails or passes the time limit is reported, not raised. The worker
loads the compiled kernels, builds the problem (timed apart as "encode"), runs one measure
or search, and prints its figures (seconds, CPU seconds, peak memory) as one JSON line.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl

from bench.longitudinal.data import ROOT, generate, read_problem
from bench.machine import peak_mib

#: The command line the worker is started with (``--worker``).
ENTRY = ROOT / "bench" / "bench_longitudinal.py"
#: Levels of the measure cases: birth year in 10-year groups, no region, the anchor as its
#: year, diagnosis at the ICD-10 block, admissions as 90-day intervals.
MEASURE_LEVELS = {"birth_year": 2, "region": 1, "anchor": 2, "diag": 2, "admission": 3}
MEASURE_POWERS = ("1", "3", "all")
SEARCH_K = 5
SEARCH_POWER = "3"
#: Subsets one exact count may examine. The product's default (50 M) is meant for a
#: request in the web app; at 1 M persons with ~10 visits each, p = 3 needs more.
BUDGET = 1_000_000_000


def cpu_s() -> float:
    """CPU seconds (user + system) this process has used: on a shared machine, what the
    work cost apart from waiting for a core."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def worker(case: str, person_path: str, event_path: str, budget: str) -> None:
    """One case in this (fresh) process; prints one JSON line."""
    if case == "generate":
        persons = int(person_path)
        started = time.perf_counter()
        paths = generate(persons, force=True)
        seconds = time.perf_counter() - started
        events = pl.scan_parquet(paths[1]).select(pl.len()).collect().item()
        print(json.dumps({"persons": persons, "events": events, "seconds": seconds,
                          "peak_mib": peak_mib(), "cpu_s": cpu_s()}))  # fmt: skip
        return
    from apps.engine.criteria import MaxRisk
    from apps.engine.longitudinal import Workspace, measure, optimal_search
    from apps.engine.longitudinal.formulas import parse_power
    from apps.engine.longitudinal.preload import load_longitudinal_code

    started = time.perf_counter()
    load_longitudinal_code()  # as the commands do before their clocks start
    load_s = time.perf_counter() - started
    problem, prepare_s = read_problem(Path(person_path), Path(event_path))
    space = Workspace(problem)
    out: dict[str, Any] = {
        "persons": problem.persons,
        "events": problem.events,
        "prepare_s": prepare_s,
        "load_s": load_s,
    }
    kind, _, raw_power = case.partition(":")
    power = parse_power(raw_power)
    started = time.perf_counter()
    if kind == "measure":
        risk = measure(
            problem,
            levels=MEASURE_LEVELS,
            power=power,
            by_power=None,
            subset_budget=int(budget),
            workspace=space,
        )
        out.update(
            {
                "seconds": time.perf_counter() - started,
                "levels": risk.levels,
                "subsets": risk.subsets,
                "min_class_size": risk.min_class_size,
                "max_risk": risk.max_risk,
                "average_risk": risk.average_risk,
                "persons_at_risk": risk.persons_at_risk,
            }
        )
    else:
        result = optimal_search(
            problem,
            MaxRisk(1 / SEARCH_K),
            power=power,
            min_levels={"anchor": 2, "diag": 2, "admission": 3},
            max_levels={"birth_year": 3},
            subset_budget=int(budget),
            workspace=space,
        )
        solution = result.solution
        out.update(
            {
                "seconds": time.perf_counter() - started,
                "levels": None if solution is None else solution.levels,
                "suppressed_persons": None if solution is None else solution.suppressed_persons,
                "suppressed_events": None if solution is None else solution.suppressed_events,
                "loss": None if solution is None else solution.information_loss,
                "nodes_total": result.nodes_total,
                "nodes_evaluated": result.nodes_evaluated,
            }
        )
    out["peak_mib"] = peak_mib()
    out["cpu_s"] = cpu_s()
    print(json.dumps(out))


def run_case(case: str, args: list[str], timeout: float) -> dict[str, Any]:
    """Run ``case`` in a fresh process; a failure or a timeout is reported, not raised."""
    cmd = [sys.executable, str(ENTRY), "--worker", case, *args]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s (the time limit)"}
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return {
            "error": f"failed (exit {done.returncode}) after "
            f"{time.perf_counter() - started:.0f} s: {last[:300]}"
        }
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out
