"""`make bench-scale`: the product's steps on N rows × 10 columns, each in bounded memory.

    .venv/bin/python bench/bench_scale.py                 # 100 million rows (tens of minutes)
    .venv/bin/python bench/bench_scale.py --rows 10000000 # a quicker validation run

The data set (seeded, synthetic) is generated chunk by chunk straight into one Parquet file
(never the whole frame in memory): a record number (Int64, the direct identifier) and the 9
quasi-identifiers of ARX's adult data as text, each row an adult row drawn at random in
which, for half of the rows, one cell is replaced by that column's value in another random
row (so about a million distinct tuples at 100 M rows, all within ARX's hierarchies).
Then each step of the product runs in its own process, so that its peak memory (VmHWM) is
its own, under a watchdog that stops it above --max-rss-gib or --step-timeout:

- upload: apps.datasets.ingest.convert_to_parquet on the same rows written as CSV (what the
  upload job runs: encoding and delimiter detected, every record checked line by line,
  converted to Parquet by streaming); the steps below read the Parquet it wrote;
- profile: apps.datasets.profiling.profile_parquet (what the upload job runs next);
- measure: apps.engine.frame.encode (a streaming group-by to the distinct tuples) and
  apps.engine.risk.risk_profile;
- search: apps.engine.search.optimal_search on the distinct tuples (k = 5, 5 % suppression,
  ARX's adult hierarchies);
- apply: apps.engine.apply.apply_solution for the solution found (record number replaced by
  its keyed pseudonym, HMAC-SHA-256; quasi-identifiers generalized, small classes
  suppressed, rows shuffled out of core), followed by its re-measure of the written file.

Results go to docs/bench/scale.md (then `bench/run.py --assemble-only` joins the fragments
into docs/benchmarks.md).

This file is the command line (and the worker's, ``--step``); the bench itself is the
package bench/scale/: the data set and the search's settings (``data``), the steps after
it (``steps``), the worker processes and their watchdog (``harness``), docs/bench/scale.md
(``report``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (the repository's root is on sys.path first)
from bench.machine import load_average  # noqa: E402
from bench.scale.data import STEPS  # noqa: E402
from bench.scale.harness import run_step, worker  # noqa: E402
from bench.scale.report import markdown  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--chunk-rows", type=int, default=5_000_000)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/deidweb-bench-scale"))
    parser.add_argument("--max-rss-gib", type=float, default=12.0, help="stop a step above this")
    parser.add_argument("--step-timeout", type=float, default=3600.0, help="seconds per step")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "scale.md")
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        worker(args)
        return 0

    before = load_average()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    data = args.data_dir / f"scale_{args.rows}_{args.seed}.parquet"
    work = args.data_dir / f"work_{args.rows}"
    work.mkdir(exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for step in STEPS:
        if step == "generate" and data.exists() and data.with_suffix(".csv").exists():
            print(f"== generate: reusing {data}", flush=True)
            continue
        print(f"== {step}", flush=True)
        results[step] = run_step(step, args, data, work)
        print(json.dumps(results[step]), flush=True)
        if "error" in results[step]:
            break
    command = "python bench/bench_scale.py" + (
        f" --rows {args.rows}" if args.rows != 100_000_000 else ""
    )
    report = markdown(args.rows, results, command, before)
    if args.no_write:
        print(report)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")
        print(f"wrote {args.out}")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
