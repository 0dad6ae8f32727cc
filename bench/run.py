"""`make bench`: run every benchmark and assemble docs/benchmarks.md from their fragments.

Each benchmark writes its own fragment (docs/bench/<name>.md, with the machine and date);
this script runs them in turn and joins the fragments under one heading.
Pass --big to include the 30M-row measure case (a few minutes). The longitudinal case runs
at the issue's size, 1 M persons and about 10 M events (generate, measure at p = 1, 3 and
all, search; half an hour or more on a shared 2-core machine); `--only longitudinal` runs it
alone, and `python bench/bench_longitudinal.py --persons N` a smaller one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FRAGMENTS = ROOT / "docs" / "bench"
BENCHMARKS = [
    ("measure", ["bench/bench_measure.py"]),
    ("search", ["bench/bench_search.py"]),
    ("techniques", ["bench/bench_techniques.py"]),
    ("longitudinal", ["bench/bench_longitudinal.py"]),
    ("microaggregation", ["bench/bench_microaggregation.py"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="include the largest cases")
    parser.add_argument("--only", choices=[name for name, _ in BENCHMARKS])
    parser.add_argument(
        "--assemble-only",
        action="store_true",
        help="only join the existing fragments into docs/benchmarks.md",
    )
    args = parser.parse_args()
    for name, command in BENCHMARKS:
        if args.assemble_only or (args.only and name != args.only):
            continue
        extra = ["--big"] if args.big and name == "measure" else []
        print(f"== {name}", flush=True)
        subprocess.run([sys.executable, *command, *extra], cwd=ROOT, check=True)
    parts = [
        "# Benchmarks",
        "",
        f"Assembled by `make bench` on {dt.date.today().isoformat()} from the fragments in "
        "`docs/bench/`; each section names the machine and the date it was measured on.",
        "",
    ]
    # grid, scale, spark and load have their own targets (make bench-grid, bench-scale,
    # bench-spark, bench-load), and the
    # search's memory per node its own script (bench/bench_lattice_memory.py, 40 minutes):
    # only joined.
    for name in [
        *(name for name, _ in BENCHMARKS),
        "grid",
        "lattice_memory",
        "scale",
        "spark",
        "web_scale",
        "load",
    ]:
        fragment = FRAGMENTS / f"{name}.md"
        if fragment.exists():
            parts += [fragment.read_text().strip(), ""]
    (ROOT / "docs" / "benchmarks.md").write_text("\n".join(parts))
    print("wrote docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
