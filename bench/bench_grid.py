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
  benchmark code reads them; e.g. cup, fars), every column a quasi-identifier; against ARX
  run here. ARX keeps these out of its repository for licensing reasons; so does this one.

Each data set's results are kept in ``docs/bench/grid.json``; ``--only NAME`` measures one
data set again and the report keeps the others' last results (each section says when it
was measured and under what load).

**The protocol** (ARX's, used for its published times): the table is parsed (strings in
memory) and the hierarchies are parsed, once per process; a measured run starts there and
does everything a search needs (``apps/engine/search/protocol.py``: encoding, hierarchy
look-ups, building the problem, the search, the solution's figures; for ARX
``ARXAnonymizer.anonymize()``, its data handle released after every run). Per
configuration one warm-up run, then ``--runs`` measured runs in the same process, the
median reported (*median*); nothing is carried from one run to the next. *cold* is the
``seconds`` of a fresh ``deid search`` process (its first run, after loading its compiled
code as an import), the median of three such processes. ARX runs in its own JVM (bench/arx/ArxGrid.java), its code compiled
by a first pass over the grid; per configuration the bench asks ARX, then deidweb, then
starts the cold process, so that all three run under the same load.

ARX is compiled from a checkout of its sources (``--arx-src``, commit aacd487, ARX 3.9.2;
bench/arx/build.sh) or given compiled (``--arx-classpath``); nothing of ARX is kept in
this repository.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ARX = ROOT.parent / "shared" / "data" / "arx"
WORK = Path("/tmp/deidweb-bench-grid")
OUT = ROOT / "docs" / "bench" / "grid.md"
ARX_HARNESS = ROOT / "bench" / "arx" / "ArxGrid.java"
ARX_BUILD = ROOT / "bench" / "arx" / "build.sh"
METRICS = ["loss", "entropy", "precision", "discernibility"]
KS = [2, 5, 11, 20]
LIMITS = [0.0, 0.05]
ADULT_QUASI = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
]
CUP_QUASI = ["age", "gender", "income", "minramnt", "ngiftall", "numchld", "state", "zip"]
GOAL_MEDIAN, GOAL_COLD = 0.25, 1.0
#: Fresh `deid search` processes per configuration; *cold* is the median of their
#: `seconds` (one process is one sample of a noisy machine).
COLD_PROCESSES = 3


#: ``--benchmark DIR``: more data sets of ARX's benchmark, laid out as ARX's benchmark
#: code reads them (``DIR/data/NAME.csv``, ``DIR/hierarchies/NAME_hierarchy_COLUMN.csv``,
#: ';'-separated), every column a quasi-identifier. They are not in this repository (ARX
#: keeps them out for licensing reasons), so they are measured against ARX run here.
BENCHMARK: Path | None = None


def _use_arx_data(folder: Path) -> None:
    global ARX
    ARX = folder


def benchmark_sets() -> dict[str, tuple[Path, str, list[str]]]:
    """The data sets of ``--benchmark``: every NAME.csv whose columns all have a hierarchy
    (ARX's adult is measured against ARX's published figures instead)."""
    if BENCHMARK is None:
        return {}
    found = {}
    names = {path.stem for path in (BENCHMARK / "data").glob("*.csv")}
    for path in sorted((BENCHMARK / "data").glob("*.csv")):
        name = path.stem
        # (NAME_subset: a subset of NAME, with NAME's hierarchies; measured only when NAME
        # itself is not there)
        base = name.removesuffix("_subset")
        if base != name and base in names:
            continue
        prefix = str(BENCHMARK / "hierarchies" / f"{base}_hierarchy_")
        with path.open(encoding="utf-8") as f:
            columns = f.readline().strip().split(";")
        if name != "adult" and all(Path(f"{prefix}{c}.csv").exists() for c in columns):
            found[name] = (path, prefix, columns)
    return found


def data_sets() -> dict[str, tuple[Path, str, list[str]]]:
    """name -> (data file, hierarchy file prefix, quasi-identifiers)."""
    return {
        "adult": (ARX / "adult.csv", str(ARX / "adult_hierarchy_"), ADULT_QUASI),
        "cup-like": (WORK / "cup_like.csv", str(WORK / "cup_like_hierarchy_"), CUP_QUASI),
        **benchmark_sets(),
    }


#: ``--configs`` (a subset of the grid, for trying the bench); None: the whole grid.
SUBSET: list[tuple[str, int, float]] | None = None


def configurations() -> Iterator[tuple[str, int, float]]:
    for metric in METRICS:
        for k in KS:
            for limit in LIMITS:
                if SUBSET is None or (metric, k, limit) in SUBSET:
                    yield metric, k, limit


# --------------------------------------------------------------------------- data


def _band(value: int, width: int) -> str:
    low = value - value % width
    return f"{low}-{low + width - 1}"


def generate_cup_like(rows: int = 60_000, seed: int = 26) -> None:
    """The synthetic case, in ARX's formats (';', hierarchies without header):

    * zip: 5-digit codes; hierarchy over all 100,000 codes, 6 levels (5, 4, 3, 2, 1
      digits kept, then ``*****``); drawn Zipf-like (weights 1/r^0.6 in a random order);
    * state: 55 states, each ZIP's by its first two digits (as ZIP prefixes go with
      states), some rows elsewhere; hierarchy state, region (3), ``*``;
    * minramnt: 0-4,999 (hierarchy over all 5,000: value, 100s, 1,000s, ``*``), mostly
      small (geometric), 2 % anywhere;
    * age 18-98 (hierarchy over 0-99: value, 5 years, 20 years, ``*``), normal around 55;
    * ngiftall 1-299 (hierarchy over 0-299: value, tens, ``*``), geometric;
    * gender F, M, U, J; income 1-7; numchld 0-7 (value, ``*`` each).

    The lattice has 6,912 nodes; nearly every row is a distinct tuple."""
    path = data_sets()["cup-like"][0]
    if path.exists():
        return
    WORK.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)

    def write(name: str, rows_: list[tuple[str, ...]]) -> None:
        text = "".join(";".join(r) + "\n" for r in rows_)
        (WORK / f"cup_like_hierarchy_{name}.csv").write_text(text)

    zips = [f"{i:05d}" for i in range(100_000)]
    write(
        "zip",
        [(z, z[:4] + "*", z[:3] + "**", z[:2] + "***", z[:1] + "****", "*****") for z in zips],
    )
    states = [f"S{i:02d}" for i in range(55)]
    write("state", [(s, f"region {i % 3}", "*") for i, s in enumerate(states)])
    write("minramnt", [(str(v), _band(v, 100), _band(v, 1000), "*") for v in range(5000)])
    write("age", [(str(v), _band(v, 5), _band(v, 20), "*") for v in range(100)])
    write("ngiftall", [(str(v), _band(v, 10), "*") for v in range(300)])
    write("gender", [(g, "*") for g in ("F", "M", "U", "J")])
    write("income", [(str(v), "*") for v in range(1, 8)])
    write("numchld", [(str(v), "*") for v in range(8)])
    weights = 1.0 / np.arange(1, 100_001) ** 0.6
    weights = weights[rng.permutation(100_000)]
    zip_codes = rng.choice(100_000, size=rows, p=weights / weights.sum())
    state_of_prefix = rng.integers(0, 55, 100)
    state = state_of_prefix[zip_codes // 1000]
    elsewhere = rng.random(rows) < 0.03
    state[elsewhere] = rng.integers(0, 55, int(elsewhere.sum()))
    amount = np.minimum(rng.geometric(1 / 15, rows) - 1 + 5 * rng.integers(0, 3, rows), 4999)
    large = rng.random(rows) < 0.02
    amount[large] = rng.integers(100, 5000, int(large.sum()))
    frame = pl.DataFrame(
        {
            "age": np.clip(rng.normal(55, 16, rows).round(), 18, 98).astype(int).astype(str),
            "gender": rng.choice(["F", "M", "U", "J"], rows, p=[0.55, 0.4, 0.04, 0.01]),
            "income": rng.integers(1, 8, rows).astype(str),
            "minramnt": amount.astype(str),
            "ngiftall": np.minimum(rng.geometric(1 / 10, rows), 299).astype(str),
            "numchld": rng.choice(
                8, rows, p=[0.55, 0.15, 0.12, 0.08, 0.05, 0.03, 0.01, 0.01]
            ).astype(str),
            "state": [states[i] for i in state],
            "zip": [zips[i] for i in zip_codes],
        }
    )
    frame.write_csv(path, separator=";")


# --------------------------------------------------------------------------- deidweb


def worker(name: str, runs: int) -> None:
    """deidweb's side: parse once, then answer one configuration per line of standard
    input with one JSON line (the protocol's runs)."""
    from apps.engine.criteria import KAnonymity
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search.preload import load_compiled_code
    from apps.engine.search.protocol import median_of_measured, timed_search

    load_compiled_code()
    path, prefix, quasi = data_sets()[name]
    hierarchies = {q: read_arx_csv(f"{prefix}{q}.csv", q) for q in quasi}
    for hierarchy in hierarchies.values():
        hierarchy.compiled  # noqa: B018 (parsing ends with the hierarchy's arrays)
    data = pl.read_csv(path, separator=";", infer_schema=False).rechunk()
    print("ready", flush=True)
    for line in sys.stdin:
        if not line.strip():
            return
        metric, k, limit = line.strip().split(",")
        seconds = []
        for _ in range(1 + runs):
            # (the previous run's result dropped first, as ARX's harness releases its data
            # handle after every run: nothing of one run lives on into the next)
            run = None
            run = timed_search(
                data,
                quasi,
                hierarchies,
                KAnonymity(int(k)),
                metric=metric,
                suppression_limit=float(limit),
            )
            seconds.append(run.seconds)
        solution = run.result.solution
        print(
            json.dumps(
                {
                    "median": median_of_measured(seconds),
                    "runs": seconds[1:],
                    "warm_up": seconds[0],
                    "loss": None if solution is None else solution.information_loss,
                    "levels": None if solution is None else list(solution.levels),
                    "suppressed": None if solution is None else solution.suppressed_rows,
                    "nodes": run.result.nodes_evaluated,
                    "lattice": run.result.nodes_total,
                    "rows": run.problem.rows,
                    "tuples": len(run.problem.counts),
                }
            ),
            flush=True,
        )


def cold_search(name: str, metric: str, k: int, limit: float) -> float:
    """``seconds`` of a fresh ``deid search`` process (its first, cold run)."""
    path, prefix, quasi = data_sets()[name]
    cmd = [
        sys.executable, "-m", "apps.engine.cli", "search", str(path), "--sep", ";",
        "--quasi", ",".join(quasi),
        *(f"--hierarchy={q}={prefix}{q}.csv" for q in quasi),
        "--k", str(k), "--suppression-limit", str(limit), "--metric", metric,
        "--no-pareto", "--json",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return float(json.loads(done.stdout)["seconds"])


# --------------------------------------------------------------------------- ARX


def arx_classpath(args: argparse.Namespace) -> str:
    if args.arx_classpath:
        return str(args.arx_classpath)
    if not args.arx_src:
        raise SystemExit(
            "ARX is measured here: give --arx-src (a checkout of arx-deidentifier/arx at "
            "aacd487) or --arx-classpath (ARX compiled); make bench-grid ARX_SRC=..."
        )
    done = subprocess.run(
        ["bash", str(ARX_BUILD), args.arx_src, str(WORK / "arx")],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


class Process:
    """A line-by-line conversation with a helper process (ARX or deidweb's worker)."""

    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        self._read_until("ready")

    def _read_until(self, word: str) -> None:
        out: IO[str] | None = self.proc.stdout
        assert out is not None
        for line in out:
            if line.strip() == word:
                return
        raise RuntimeError(f"{self.proc.args[0]} stopped before it was {word}")

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"{self.proc.args[0]} stopped on {line}")
        return answer.strip()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def start_arx(classpath: str, name: str, runs: int) -> Process:
    build = WORK / "arx-harness"
    build.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-cp", classpath, "-d", str(build), str(ARX_HARNESS)], check=True
    )
    path, prefix, quasi = data_sets()[name]
    grid = [f"{m},{k},{s}" for m, k, s in configurations()]
    return Process(
        ["java", "-cp", f"{build}{os.pathsep}{classpath}", "ArxGrid", str(path), prefix]
        + [",".join(quasi), str(runs), *grid]
    )


def parse_arx(line: str) -> dict[str, Any]:
    metric, k, limit, score, median, levels, runs = line.split(",", 6)
    return {
        "score": score,
        "median": float(median) / 1000,
        "levels": [int(part.split("=")[1]) for part in levels.split(";")] if levels else None,
        "runs": [float(v) / 1000 for v in runs.split(";")],
    }


def read_published(path: Path) -> dict[tuple[str, int, float], tuple[str, float]]:
    """(metric, k, limit) -> (ARX's score as written, ARX's median seconds)."""
    out = {}
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    for row in csv.DictReader(lines):
        key = (row["metric"], int(row["k"]), float(row["suppression_limit"]))
        out[key] = (row["arx_information_loss"], float(row["arx_anonymize_ms_median"]) / 1000)
    return out


# --------------------------------------------------------------------------- report


def machine() -> str:
    model = "unknown CPU"
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            model = line.split(":", 1)[1].strip()
    mem = 0.0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) / 1024**2
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return f"{model}, nproc {nproc}, {mem:.1f} GiB RAM"


def same_score(ours: float | None, theirs: str) -> str:
    """Our optimum's information loss against ARX's, as a relative difference (ARX
    prints Java doubles): "same", or the difference."""
    if ours is None:
        return "none" if not theirs else "ARX only"
    try:
        value = float(theirs)
    except ValueError:
        return "deidweb only"
    if value == ours:
        return "same"
    return f"{abs(ours - value) / max(abs(value), 1e-300):.0e}"


def _cpu_ticks(pid: int) -> int:
    """User + system CPU ticks of a process and its threads so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def quiet(*processes: Process, still: float = 0.1, most: float = 2.0) -> None:
    """Wait until the processes use no CPU for ``still`` seconds (at most ``most``): ARX's
    JVM keeps compiling and collecting on its own threads after it has answered, and on
    two cores that took the core the next side's runs were timed on (deidweb's runs on a
    10,000-row table measured up to 2x slower right after ARX's than on their own). Each
    side now starts its runs on a machine the other has left idle, as each would be
    measured alone; both still run in the same minute, under the same load."""
    pids = [p.proc.pid for p in processes]
    deadline = time.monotonic() + most
    last = [_cpu_ticks(pid) for pid in pids]
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = [_cpu_ticks(pid) for pid in pids]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= still:
            return


def run_grid(name: str, classpath: str, runs: int, cold: bool) -> list[dict[str, Any]]:
    arx = start_arx(classpath, name, runs)
    ours = Process(
        [sys.executable, __file__, "--worker", name, "--runs", str(runs), "--arx-data", str(ARX)]
        + ([] if BENCHMARK is None else ["--benchmark", str(BENCHMARK)])
    )
    rows = []
    try:
        for metric, k, limit in configurations():
            config = f"{metric},{k},{limit}"
            quiet(ours, arx)
            theirs = parse_arx(arx.ask(config))
            quiet(arx, ours)
            mine = json.loads(ours.ask(config))
            row = {"metric": metric, "k": k, "limit": limit, "arx": theirs, **mine}
            colds = [
                cold_search(name, metric, k, limit) for _ in range(COLD_PROCESSES if cold else 0)
            ]
            row["cold"] = statistics.median(colds) if colds else None
            row["colds"] = colds
            print(name, json.dumps(row), flush=True)
            rows.append(row)
    finally:
        ours.close()
        arx.close()
    return rows


def table(name: str, result: dict[str, Any], published: dict[Any, Any] | None) -> list[str]:
    rows = result["rows"]
    first = rows[0]
    loads = [" / ".join(f"{v:.2f}" for v in result[key]) for key in ("load_before", "load_after")]
    lines = [
        f"## {name}: {first['rows']:,} rows, {first['tuples']:,} distinct tuples, "
        f"lattice of {first['lattice']:,} nodes",
        "",
        f"Measured {result['started']} UTC, {result['runs']} runs per configuration; load "
        f"average (1/5/15 min) before {loads[0]}, after {loads[1]}"
        + (
            "; each side's runs started once the other process was idle (`quiet`)."
            if result.get("idle_wait")
            else "; measured before the bench waited for the other process to be idle, so "
            "deidweb's runs right after ARX's shared the second core with ARX's JVM threads."
        ),
        "",
    ]
    head = "| metric | k | suppression | median s | cold s | ARX here s | "
    rule = "|---|---:|---:|---:|---:|---:|"
    if published:
        head += "ARX published s | median / ARX published | cold / ARX published | "
        rule += "---:|---:|---:|"
    head += "median / ARX here | cold / ARX here | nodes | levels | score vs ARX |"
    rule += "---:|---:|---:|---|---|"
    lines += [head, rule]
    worst: dict[str, tuple[float, str]] = {}
    met: dict[str, float] = {}
    counts: dict[str, int] = {}

    def note(column: str, value: float, label: str) -> None:
        if column not in worst or value > worst[column][0]:
            worst[column] = (value, label)
        met[column] = GOAL_COLD if column.startswith("cold") else GOAL_MEDIAN
        counts[column] = counts.get(column, 0) + (value <= met[column])

    for r in rows:
        key = (r["metric"], r["k"], r["limit"])
        label = f"{key[0]}, k = {key[1]}, {key[2]:.0%}"
        here = r["arx"]["median"]
        cells = [key[0], str(key[1]), f"{key[2]:.0%}", f"{r['median']:.4f}"]
        cells.append("–" if r["cold"] is None else f"{r['cold']:.4f}")
        cells.append(f"{here:.4f}")
        reference_score = r["arx"]["score"]
        if published:
            score, seconds = published[key]
            reference_score = score
            cells += [f"{seconds:.4f}", f"{r['median'] / seconds:.3f}"]
            cells.append("–" if r["cold"] is None else f"{r['cold'] / seconds:.3f}")
            note("median / ARX published", r["median"] / seconds, label)
            if r["cold"] is not None:
                note("cold / ARX published", r["cold"] / seconds, label)
        cells += [f"{r['median'] / here:.3f}"]
        cells.append("–" if r["cold"] is None else f"{r['cold'] / here:.3f}")
        note("median / ARX here", r["median"] / here, label)
        if r["cold"] is not None:
            note("cold / ARX here", r["cold"] / here, label)
        levels = r["levels"]
        tie = "" if r["arx"]["levels"] in (None, levels) else f" (ARX: {r['arx']['levels']})"
        cells += [f"{r['nodes']:,}", f"{levels}{tie}", same_score(r["loss"], reference_score)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Worst ratios on {name}:"]
    lines += [f"- {column}: **{v:.3f}** ({label})" for column, (v, label) in worst.items()]
    lines += ["", f"Configurations within the goals on {name} (of {len(rows)}):"]
    for column, goal in met.items():
        lines.append(f"- {column} <= {goal}: {counts[column]}")
    lines.append("")
    return lines


def measure(args: argparse.Namespace, name: str, classpath: str) -> dict[str, Any]:
    """One data set's grid, with when and under what load it was measured."""
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    rows = run_grid(name, classpath, args.runs, not args.no_cold)
    return {
        "started": f"{started:%Y-%m-%d %H:%M}",
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "runs": args.runs,
        "machine": machine(),
        "idle_wait": True,
        "rows": rows,
    }


def report(results: dict[str, dict[str, Any]], java: str) -> list[str]:
    """docs/bench/grid.md from every data set's results (measured now or kept)."""
    published = read_published(ARX / "arx_adult_grid.csv")  # (ARX: --arx-data)
    worst: tuple[float, str] = (0.0, "")
    within = total = 0
    for name, result in results.items():
        for r in result["rows"]:
            reference = published[(r["metric"], r["k"], r["limit"])][1] if name == "adult" else None
            ratio = r["median"] / (reference or r["arx"]["median"])
            total += 1
            within += ratio <= GOAL_MEDIAN
            if ratio > worst[0]:
                worst = (ratio, f"{name}, {r['metric']}, k = {r['k']}, {r['limit']:.0%}")
    lines = [
        "# ARX's k-anonymity grid under ARX's protocol (issue #26)",
        "",
        f"- data sets: {', '.join(results)} (each section says when it was measured, and the load)",
        f"- machine: {next(iter(results.values()))['machine']}",
        f"- Python {platform.python_version()}, polars {pl.__version__}, numpy {np.__version__}; "
        f"ARX 3.9.2 (aacd487) on {java.splitlines()[0] if java else 'java'}",
        "- command: `make bench-grid ARX_SRC=<a checkout of arx-deidentifier/arx at aacd487> "
        "[ARX_BENCHMARK=<ARX's benchmark data sets>]` (`python bench/bench_grid.py --runs 5`; "
        "`--only NAME` measures one data set again and keeps the others' last results, from "
        "docs/bench/grid.json)",
        f"- **worst median ratio: {worst[0]:.3f}** ({worst[1]}), against ARX's published time "
        f"for adult and ARX measured here for the others; {within} of {total} configurations "
        f"within {GOAL_MEDIAN} x ARX",
        "",
        "Both sides ran under the same load, configuration by configuration (load averages "
        "in each section): the ratios against ARX measured here are the fair comparison; "
        "ARX's published adult times were measured on a quiet machine, so on a busy machine "
        "the ratios against them are worse than the same code would show there.",
        "",
        "Every configuration under ARX's protocol: the table parsed (strings in memory, one "
        "chunk per column) and "
        "the hierarchies parsed once per process; each run encodes the data, looks the "
        "values up in the hierarchies, builds the problem, searches and computes the "
        "solution's figures (ARX: `ARXAnonymizer.anonymize()`, the data handle released "
        "after each run); one warm-up run, then the measured runs, *median* = "
        "their median; nothing is kept from one run for the next. *cold* = `seconds` of "
        "a fresh `deid search` process (its first run, after loading its compiled code as "
        f"an import), the median of {COLD_PROCESSES} such processes. *ARX here* = ARX "
        "3.9.2 measured by bench/arx/ArxGrid.java in the "
        "same run, configuration by configuration interleaved with deidweb (same load); "
        "*ARX published* = ARX's own figures for adult (`../shared/data/arx/"
        "arx_adult_grid.csv`: OpenJDK 17, a quiet 2-core machine of this kind). Goals: "
        f"median <= {GOAL_MEDIAN} x ARX, cold <= {GOAL_COLD} x ARX. *score vs ARX*: our "
        "optimum's information loss against ARX's (same, or the relative difference: "
        "ARX prints doubles, and keeps 10 digits of each share of its loss); "
        "*levels*: our optimum (ARX's too where it chose another node of equal score).",
        "",
        "The data sets: *adult* (ARX's benchmark, ../shared/data/arx); *cup-like* (a seeded "
        "synthetic case shaped like ARX's worst case, generated by the bench); with "
        "`ARX_BENCHMARK=` (a folder laid out as ARX's benchmark code reads it: "
        "data/NAME.csv, hierarchies/NAME_hierarchy_COLUMN.csv) every data set there whose "
        "columns all have a hierarchy, every column a quasi-identifier (e.g. *cup*, *fars*; "
        "ARX keeps them out of its repository for licensing reasons, so they are not in "
        "this one either).",
        "",
        "What each side does outside the timed runs, to judge the comparison: ARX's data "
        "handle dictionary-encodes the table when first asked (before the timed runs) and "
        "keeps those rows of integers; each anonymize() then builds its data manager (the "
        "quasi-identifiers' columns, every hierarchy's strings encoded), the lattice and "
        "the search. deidweb encodes the table of strings again in every run; a hierarchy "
        "is numbered level by level and its leaves indexed once, when it is parsed "
        "(`Hierarchy.compiled`), and every run looks up only the data's distinct values "
        "in it.",
        "",
    ]
    for name, result in results.items():
        lines += table(name, result, published if name == "adult" else None)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="measured runs (after one warm-up)")
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
        "--arx-data", type=Path, default=ARX, help="ARX's benchmark data (../shared/data/arx)"
    )
    args = parser.parse_args()
    _use_arx_data(args.arx_data)
    global BENCHMARK
    BENCHMARK = args.benchmark
    if args.configs:
        global SUBSET
        SUBSET = []
        for item in args.configs.split(";"):
            metric, k, limit = item.split(",")
            SUBSET.append((metric, int(k), float(limit)))
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
    if SUBSET is not None:  # (a subset is a try-out: its results are not kept)
        results = {}
    for name in names:
        results[name] = measure(args, name, classpath)
        if SUBSET is None:
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
