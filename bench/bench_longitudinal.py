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

This file is the command line (and the worker's, ``--worker``); the bench itself is the
package bench/longitudinal/: the tables and the problem built from them (``data``), the
cases and their worker processes (``measure``), docs/bench/longitudinal.md (``report``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (the repository's root is on sys.path first)
from bench.longitudinal.data import WORK, generate  # noqa: E402
from bench.longitudinal.measure import (  # noqa: E402
    BUDGET,
    MEASURE_POWERS,
    SEARCH_POWER,
    run_case,
    worker,
)
from bench.longitudinal.report import render, results_path  # noqa: E402
from bench.machine import load_average, machine, software  # noqa: E402


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
