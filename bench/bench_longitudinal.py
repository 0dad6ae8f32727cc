"""Benchmark of longitudinal measure and search (issue 25): writes docs/bench/longitudinal.md.

    .venv/bin/python bench/bench_longitudinal.py                     # 1 M persons, ~10 M events
    .venv/bin/python bench/bench_longitudinal.py --persons 20000     # a quick check

Data (seeded, generated into /tmp, never into the repository): a person table (sex, birth
year, region) and an event table of hospital visits, 1 + Poisson(9) visits per person
(about 10 per person): an ICD-10 diagnosis drawn from about 20,000 codes with Zipf-like
frequencies, and an admission date (first visit uniform over 2018-2021, then gaps of
exponential length, mean 60 days).

Cases, each in a fresh worker process (times = from the tables in memory to the result;
reading the Parquet files is not timed; peak = the worker's maximum resident memory, input
included):

* **measure**: anchored dates, diagnosis at the ICD-10 block level, admissions as 90-day
  intervals, anchor year, birth year in 10-year groups, no region; power 2, and the powers
  1…5 and "all" (a power whose exact count exceeds the subset budget is reported so);
* **search**: k = 5 (maximum risk 0.2), power 2, 5 % of persons and 5 % of events may be
  suppressed, over sex, birth year (year, 5, 10 years, *), region (kept or *), number of
  events (P95 top-code, ranges, *), anchor (year, 5 years, *), diagnosis (block,
  chapter, *) and admission interval (90 days, 365 days, *).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
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
WORK = Path("/tmp/deidweb-bench-longitudinal")
OUT = ROOT / "docs" / "bench" / "longitudinal.md"
SEED = 2025


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


def generate(persons: int) -> tuple[Path, Path]:
    WORK.mkdir(parents=True, exist_ok=True)
    person_path = WORK / f"persons_{persons}.parquet"
    event_path = WORK / f"visits_{persons}.parquet"
    if person_path.exists() and event_path.exists():
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


def worker(case: str, person_path: str, event_path: str) -> None:
    from apps.engine.criteria import MaxRisk
    from apps.engine.longitudinal import Workspace, measure, optimal_search
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
    started = time.perf_counter()
    if case == "measure":
        levels = {"birth_year": 2, "region": 1, "anchor": 2, "diag": 2, "admission": 3}
        risk = measure(problem, levels=levels, power=2, workspace=space)
        out.update(
            {
                "seconds": time.perf_counter() - started,
                "levels": risk.levels,
                "subsets": risk.subsets,
                "max_risk": risk.max_risk,
                "average_risk": risk.average_risk,
                "by_power": {
                    key: (None if r.average_risk is None else round(r.average_risk, 4))
                    for key, r in risk.by_power.items()
                },
            }
        )
    else:
        result = optimal_search(
            problem,
            MaxRisk(0.2),
            power=2,
            min_levels={"anchor": 2, "diag": 2, "admission": 3},
            max_levels={"birth_year": 3},
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
    print(json.dumps(out))


def run_case(case: str, paths: tuple[Path, Path]) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", case, str(paths[0]), str(paths[1])]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def machine() -> str:
    model = "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem = next(
            int(line.split()[1]) // (1024 * 1024) for line in f if line.startswith("MemTotal:")
        )
    return (
        f"{model}, {os.cpu_count()} cores, {mem} GiB RAM, Python {platform.python_version()}, "
        f"polars {pl.__version__}, numpy {np.__version__}; load average at start "
        f"{os.getloadavg()[0]:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persons", type=int, default=1_000_000)
    parser.add_argument("--cases", default="measure,search")
    parser.add_argument("--worker", nargs=3)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    header = machine()
    paths = generate(args.persons)
    rows = []
    for case in args.cases.split(","):
        result = run_case(case, paths)
        rows.append((case, result))
        print(case, result, flush=True)
    lines = [
        "# Longitudinal benchmark (risk counted in persons, issue 25)",
        "",
        f"Generated by `bench/bench_longitudinal.py --persons {args.persons}` on "
        f"{dt.date.today().isoformat()}.",
        f"Machine: {header}.",
        "",
        "The machine is shared with other jobs (see the load average): absolute times "
        "include that contention. Data and cases: see the script's docstring. "
        '"prepare s" = validating the two tables and building the quasi-identifiers '
        '(event count, anchor, intervals, ICD-10 levels); "s" = the measure or the '
        'search after it; "load s" = loading the compiled kernels first (once per '
        "process); peak = the worker's maximum resident memory, input included.",
        "",
        "| case | persons | events | load s | prepare s | s | peak MiB | result |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for case, r in rows:
        if case == "measure":
            what = (
                f"levels {r['levels']}, {r['subsets']:,} subsets, max risk "
                f"{r['max_risk']:.4f}, average {r['average_risk']:.4f}; average by power "
                f"{r['by_power']}"
            )
        else:
            what = (
                f"levels {r['levels']}, {r['suppressed_persons']} persons and "
                f"{r['suppressed_events']} events suppressed, loss {r['loss']}, "
                f"{r['nodes_evaluated']} of {r['nodes_total']} nodes evaluated"
            )
        lines.append(
            f"| {case} | {r['persons']:,} | {r['events']:,} | {r['load_s']:.1f} | "
            f"{r['prepare_s']:.1f} | "
            f"{r['seconds']:.1f} | {r['peak_mib']:.0f} | {what} |"
        )
    lines.append("")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
