"""Benchmark of longitudinal measure and search (issue 25): writes docs/bench/longitudinal.md.

    .venv/bin/python bench/bench_longitudinal.py                     # 1 M persons, ~10 M events
    .venv/bin/python bench/bench_longitudinal.py --persons 20000     # a quick check

Data (seeded, generated into /tmp, never into the repository): a person table (sex, birth
year, region) and an event table of hospital visits, 1 + Poisson(9) visits per person
(about 10 per person): an ICD-10 diagnosis drawn from about 20,000 codes with Zipf-like
frequencies, and an admission date (first visit uniform over 2018-2021, then gaps of
exponential length, mean 60 days).

Cases, each in a fresh worker process whose peak resident memory (VmHWM, as the other
benchmarks) is its own, input included; a case that fails or passes ``--timeout`` is
reported as such and the others still run:

* **generate**: drawing both tables and writing them as Parquet;
* **measure:1, measure:3, measure:all**: encoding (the two tables read into the problem:
  event count, anchor, intervals, ICD-10 levels; timed separately as "encode"), then one
  exact per-person count at adversary power 1, 3 and "all", at anchored dates, diagnosis
  at the ICD-10 block level, admissions as 90-day intervals, the anchor (first visit) as its year,
  birth year in 10-year groups, no region;
* **search:3**: k = 5 (maximum risk 0.2) at power 3, 5 % of persons and 5 % of events
  may be suppressed, over sex, birth year (year, 5, 10 years, *), region (kept or *),
  number of events (P95 top-code, ranges, *), anchor (year, 5 years, *), diagnosis
  (block, chapter, *) and admission interval (90 days, 365 days, *).

Times run from the tables in memory to the result (reading the Parquet files is not
timed). The subset budget is raised to ``BUDGET`` (``--budget``): at this size power 3
examines more subsets than the product's default allows a web request.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import load_average, machine, software  # noqa: E402 (the root is on sys.path first)

WORK = Path("/tmp/deidweb-bench-longitudinal")
OUT = ROOT / "docs" / "bench" / "longitudinal.md"
SEED = 2025
#: Levels of the measure cases: birth year in 10-year groups, no region, the anchor as its
#: year, diagnosis at the ICD-10 block, admissions as 90-day intervals.
MEASURE_LEVELS = {"birth_year": 2, "region": 1, "anchor": 2, "diag": 2, "admission": 3}
MEASURE_POWERS = ("1", "3", "all")
SEARCH_K = 5
SEARCH_POWER = "3"
#: Subsets one exact count may examine. The product's default (50 M) is meant for a
#: request in the web app; at 1 M persons with ~10 visits each, p = 3 needs more.
BUDGET = 1_000_000_000


def _codes(rng: np.random.Generator) -> np.ndarray[Any, Any]:
    """About 20,000 ICD-10 codes: every category of every WHO block, with .0-.9."""
    from apps.engine.longitudinal.codes import ICD10, code_ranges

    categories = []
    for block in code_ranges(ICD10):
        if block.level != "block":
            continue
        letter0, letter1 = block.start[0], block.end[0]
        for letter in sorted({letter0, letter1}):
            low = int(block.start[1:]) if letter == letter0 else 0
            high = int(block.end[1:]) if letter == letter1 else 99
            categories += [f"{letter}{n:02d}" for n in range(low, high + 1)]
    codes = np.array([f"{c}.{d}" for c in categories for d in range(10)])
    rng.shuffle(codes)
    return codes


def generate(persons: int, *, force: bool = False) -> tuple[Path, Path]:
    """Write the person and visit tables for ``persons`` (kept unless ``force``)."""
    WORK.mkdir(parents=True, exist_ok=True)
    person_path = WORK / f"persons_{persons}.parquet"
    event_path = WORK / f"visits_{persons}.parquet"
    if person_path.exists() and event_path.exists() and not force:
        return person_path, event_path
    rng = np.random.default_rng(SEED)
    ids = np.arange(1, persons + 1)
    pl.DataFrame(
        {
            "pid": ids,
            "sex": rng.choice(np.array(["F", "M"]), persons),
            "birth_year": rng.integers(1930, 2006, persons).astype(str),
            "region": rng.choice(np.array([f"R{r:02d}" for r in range(12)]), persons),
        }
    ).write_parquet(person_path)
    visits = 1 + rng.poisson(9, persons)
    total = int(visits.sum())
    person = np.repeat(ids, visits)
    codes = _codes(rng)
    ranks = np.arange(1, len(codes) + 1, dtype=np.float64)
    weights = 1.0 / ranks**1.1
    diag = codes[rng.choice(len(codes), total, p=weights / weights.sum())]
    first = rng.integers(0, 4 * 365, persons)
    gaps = rng.exponential(60.0, total).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(visits)[:-1]])
    gaps[starts] = 0
    within = np.cumsum(gaps) - np.repeat(np.cumsum(gaps)[starts], visits)
    days = np.repeat(first, visits) + within
    admission = (np.datetime64("2018-01-01") + days.astype("timedelta64[D]")).astype(str)
    pl.DataFrame({"pid": person, "diag": diag, "admission": admission}).write_parquet(event_path)
    return person_path, event_path


def _problem(person_path: Path, event_path: Path) -> Any:
    from apps.engine.hierarchies import interval_hierarchy, suppression_hierarchy
    from apps.engine.longitudinal import (
        DateSpec,
        EventCountSpec,
        EventTable,
        from_tables,
        prepare,
    )

    persons = pl.read_parquet(person_path)
    events = pl.read_parquet(event_path)
    started = time.perf_counter()
    data = from_tables(
        persons=persons,
        person_key="pid",
        person_quasi=["sex", "birth_year", "region"],
        events=[EventTable("visits", events, "pid", ("diag", "admission"))],
    )
    years = persons["birth_year"].unique().to_list()
    problem = prepare(
        data,
        hierarchies={
            "sex": suppression_hierarchy("sex", ["F", "M"]),
            "birth_year": interval_hierarchy("birth_year", years, [5, 10]),
            "region": suppression_hierarchy("region", persons["region"].unique().to_list()),
            "diag": "icd10",
        },
        dates=DateSpec(("admission",), "anchored"),
        event_count=EventCountSpec(),
        require_hierarchies=True,
    )
    return problem, time.perf_counter() - started


def peak_mib() -> float:
    """This process's peak resident memory (VmHWM)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
    problem, prepare_s = _problem(Path(person_path), Path(event_path))
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
    cmd = [sys.executable, __file__, "--worker", case, *args]
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


def _what(case: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return r["error"]
    if case == "generate":
        return "person and visit tables written as Parquet"
    if case.startswith("measure"):
        return (
            f"{r['subsets']:,} subsets; smallest count {r['min_class_size']}, max risk "
            f"{r['max_risk']:.4f}, average {r['average_risk']:.4f}, "
            f"{r['persons_at_risk']:,} persons at risk (> 0.2)"
        )
    if r["levels"] is None:
        return f"no solution; {r['nodes_evaluated']} of {r['nodes_total']} nodes evaluated"
    return (
        f"levels {r['levels']}; {r['suppressed_persons']:,} persons and "
        f"{r['suppressed_events']:,} events suppressed, loss {r['loss']:.4f}; "
        f"{r['nodes_evaluated']} of {r['nodes_total']} nodes evaluated"
    )


def _cell(r: dict[str, Any], key: str, form: str) -> str:
    return format(r[key], form) if key in r and r[key] is not None else "–"


def results_path(persons: int) -> Path:
    return WORK / f"results_{persons}.jsonl"


def render(persons: int, budget: int, note: str) -> None:
    """Write the fragment from the results saved for ``persons`` (one JSON per line: the
    machine first, then each case as it finished)."""
    saved = [json.loads(line) for line in results_path(persons).read_text().splitlines()]
    head, rows = saved[0], [(r.pop("case"), r) for r in saved[1:]]
    lines = [
        "# Longitudinal benchmark (risk counted in persons, issue 25)",
        "",
        f"Generated by `bench/bench_longitudinal.py --persons {persons}` started "
        f"{head['started']} (UTC).",
        f"Machine: {head['machine']}.",
        "",
        "**The machine was shared with other work while this ran** (other sessions' test "
        "suites and benchmarks on its 2 cores; the 1-minute load average is given at the "
        "start and after each case): wall times include waiting for a core, so the CPU "
        "seconds the case's process used are given beside them. Data: one person table "
        "(sex, birth year, region) and one visit table, 1 + Poisson(9) visits per person, "
        "an ICD-10 code from about 20,000 with Zipf-like frequencies and an admission date "
        "(see the script's docstring). Each case runs in a fresh process: "
        '"generate" = drawing both tables and writing them as Parquet; "encode s" = '
        "validating the two tables and building the quasi-identifiers (event count, anchor, "
        'intervals, ICD-10 levels) from the tables in memory; "s" = the measure or the '
        'search after it; "load s" = loading the compiled kernels (once per process); '
        '"CPU s" = user + system time of the whole process; '
        "peak RSS = the process's maximum resident memory (VmHWM), input included. "
        f"Measure: one exact count at the levels {MEASURE_LEVELS}, nothing else counted in "
        f"the same process. Search: k = {SEARCH_K} (maximum risk {1 / SEARCH_K:g}) at "
        f"power {SEARCH_POWER}, 5 % of persons and 5 % of events may be suppressed. Subset "
        f"budget {budget:,} per count (the product's default is 50,000,000).",
        "",
    ]
    if note:
        lines += [note, ""]
    lines += [
        "| case | persons | events | load s | encode s | s | CPU s | peak RSS MiB "
        "| load avg after | result |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for case, r in rows:
        lines.append(
            f"| {case} | {_cell(r, 'persons', ',')} | {_cell(r, 'events', ',')} | "
            f"{_cell(r, 'load_s', '.1f')} | {_cell(r, 'prepare_s', '.1f')} | "
            f"{_cell(r, 'seconds', '.1f')} | {_cell(r, 'cpu_s', '.0f')} | "
            f"{_cell(r, 'peak_mib', '.0f')} | {r['load_after']:.2f} | {_what(case, r)} |"
        )
    lines.append("")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument(
        "--cases",
        default=",".join(
            ["generate", *(f"measure:{p}" for p in MEASURE_POWERS), f"search:{SEARCH_POWER}"]
        ),
        help="generate, measure:P, search:P (P = 1…10 or all), comma-separated",
    )
    parser.add_argument("--budget", type=int, default=BUDGET, help="subset budget per count")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per case")
    parser.add_argument("--note", default="", help="a paragraph added to the fragment")
    parser.add_argument(
        "--render-only", action="store_true", help="write the fragment from saved results"
    )
    parser.add_argument("--worker", nargs=4)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    if args.render_only:
        render(args.persons, args.budget, args.note)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    saved = results_path(args.persons)
    started = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M")
    saved.write_text(
        json.dumps(
            {
                "machine": f"{machine()}, {software()}; load average at start {load_average()}",
                "started": started,
            }
        )
        + "\n"
    )
    paths = WORK / f"persons_{args.persons}.parquet", WORK / f"visits_{args.persons}.parquet"
    for case in args.cases.split(","):
        if case == "generate":
            result = run_case(case, [str(args.persons), "-", "-"], args.timeout)
        else:
            if not all(path.exists() for path in paths):
                generate(args.persons)
            result = run_case(case, [str(paths[0]), str(paths[1]), str(args.budget)], args.timeout)
        result["load_after"] = os.getloadavg()[0]
        with saved.open("a") as f:
            f.write(json.dumps({"case": case, **result}) + "\n")
        print(case, result, flush=True)
    render(args.persons, args.budget, args.note)


if __name__ == "__main__":
    main()
