"""ARX's k-anonymity grid under ARX's protocol, deidweb and ARX interleaved: docs/bench/grid.md.

    make bench-grid ARX_SRC=/path/to/arx                  # what the docs report
    .venv/bin/python bench/bench_grid.py --arx-src /path/to/arx [--runs 5] [--only adult]
    .venv/bin/python bench/bench_grid.py --arx-classpath CP  # ARX compiled already

The grid: k in {2, 5, 11, 20} x suppression limit {0, 5 %} x metric {loss, entropy,
precision, discernibility}, k-anonymity alone, on these data sets:

* adult (ARX's benchmark: 30,162 rows, all 9 columns as quasi-identifiers, ARX's
  hierarchies, ../shared/data/arx), against ARX 3.9.2's own published times
  (``arx_adult_grid.csv`` there) and against ARX run here in the same run;
* a synthetic case shaped like the worst case of ARX's benchmark (seeded, into
  /tmp/deidweb-bench-grid, nothing committed: :func:`generate_cup_like`): 60,000 rows,
  8 quasi-identifiers, among them a ZIP-like code with a 6-level hierarchy of all
  100,000 codes and an amount with a 5,000-value hierarchy; against ARX run here;
* with ``--benchmark DIR`` (``make bench-grid ARX_BENCHMARK=DIR``), every data set of ARX's
  benchmark in DIR (``data/NAME.csv``, ``hierarchies/NAME_hierarchy_COLUMN.csv``, as ARX's
  benchmark code reads them; e.g. cup, fars, and the samples adult_subset, cup_subset,
  fars_subset, each a data set of its own), every column a quasi-identifier; against ARX
  run here. ARX keeps these out of its repository for licensing reasons; so does this one.

Each data set's results are kept in ``docs/bench/grid.json``; ``--only NAME`` measures one
data set again and the report keeps the others' last results (each section says when it
was measured and under what load).

**The protocol** (ARX's, used for its published times): the table is parsed (strings in
memory) and the hierarchies are parsed, once per process; a measured run starts there and
does everything a search needs (``apps/engine/search/protocol.py``: encoding, hierarchy
look-ups, building the problem, the search, the solution's figures; for ARX
``ARXAnonymizer.anonymize()``, its data handle released after every run). Per
configuration one warm-up run, then ``--runs`` measured runs in the same process, their
median (a *turn*); nothing is carried from one run to the next. The machine's speed drifts
from second to second (a virtual CPU, steal time), so each configuration is measured in
``--turns`` turns (3 by default), ARX and deidweb alternating who goes first, each side
starting once the other is idle; each side's *median* is the median of its turns' medians,
the same statistic for both, each turn being ARX's protocol unchanged. *cold* is the
``seconds`` of a fresh ``deid search`` process (its first run, after loading its compiled
code as an import), the median of three such processes. ARX runs in its own JVM
(bench/arx/ArxGrid.java), its code compiled by a first pass over the grid; the cold
processes start right after a configuration's turns, so that all run under the same load.

ARX is compiled from a checkout of its sources (``--arx-src``, commit aacd487, ARX 3.9.2;
bench/arx/build.sh) or given compiled (``--arx-classpath``); nothing of ARX is kept in
this repository.

This file is the command line (and the worker's, ``--worker``); the bench itself is the
package bench/grid/: the data sets and configurations (``data``), the conversation with ARX
and the worker (``harness``), docs/bench/grid.md (``report``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.grid import data  # noqa: E402 (the repository's root is on sys.path first)
from bench.grid.data import data_sets, generate_cup_like  # noqa: E402
from bench.grid.harness import arx_classpath, measure, worker  # noqa: E402
from bench.grid.report import OUT, report  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="measured runs (after one warm-up)")
    parser.add_argument(
        "--turns",
        type=int,
        default=3,
        help="turns per configuration: the protocol whole on each side, ARX and deidweb "
        "alternating who goes first; each side's figure is the median of its turns' medians",
    )
    parser.add_argument("--only", help="one data set: adult, cup-like, or one of --benchmark")
    parser.add_argument(
        "--benchmark",
        type=Path,
        help="a folder of ARX's benchmark data sets (data/NAME.csv, hierarchies/"
        "NAME_hierarchy_COLUMN.csv), each measured too",
    )
    parser.add_argument("--worker")
    parser.add_argument("--arx-src", help="a checkout of ARX's sources (compiled here)")
    parser.add_argument("--arx-classpath", help="ARX compiled (instead of --arx-src)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold processes")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--configs", help="metric,k,limit[;...]: a subset of the grid")
    parser.add_argument(
        "--arx-data", type=Path, default=data.ARX, help="ARX's benchmark data (../shared/data/arx)"
    )
    args = parser.parse_args()
    data._use_arx_data(args.arx_data)
    data.BENCHMARK = args.benchmark
    if args.configs:
        data.SUBSET = []
        for item in args.configs.split(";"):
            metric, k, limit = item.split(",")
            data.SUBSET.append((metric, int(k), float(limit)))
    if args.worker:
        worker(args.worker, args.runs)
        return
    if args.only and args.only not in data_sets():
        raise SystemExit(f"--only {args.only}: not a data set here ({', '.join(data_sets())})")
    generate_cup_like()
    classpath = arx_classpath(args)
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    names = [args.only] if args.only else list(data_sets())
    store = args.out.with_suffix(".json")
    results: dict[str, dict[str, Any]] = json.loads(store.read_text()) if store.exists() else {}
    if data.SUBSET is not None:  # (a subset is a try-out: its results are not kept)
        results = {}
    for name in names:
        results[name] = measure(args, name, classpath)
        if data.SUBSET is None:
            store.parent.mkdir(parents=True, exist_ok=True)
            store.write_text(json.dumps(results, indent=1) + "\n")
    order = [n for n in ("adult", "cup-like") if n in results] + sorted(
        n for n in results if n not in ("adult", "cup-like")
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report({n: results[n] for n in order}, java)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
