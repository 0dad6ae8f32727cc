"""ARX's k-anonymity grid against ARX's own times: writes docs/bench/grid.md.

    .venv/bin/python bench/bench_grid.py                 # adult and the ZIP-like case
    .venv/bin/python bench/bench_grid.py --only adult --runs 3
    .venv/bin/python bench/bench_grid.py --arx-classpath CP   # re-measure ARX (ZIP case)

The grid: k in {2, 5, 11, 20} x suppression limit {0, 5 %} x metric {loss, entropy,
precision, discernibility}, k-anonymity alone, on two data sets:

* adult (ARX's benchmark: 30,162 rows, all 9 columns as quasi-identifiers, ARX's
  hierarchies, ../shared/data/arx); ARX's times and scores are ARX 3.9.2's own, from
  ``arx_adult_grid.csv`` there (median of 5 ``anonymize()`` after a warm-up);
* a ZIP-like case, generated here (seeded, into /tmp, nothing committed): 50,000 rows with
  a 5-digit ZIP code (6-level hierarchy over all 100,000 codes: 5, 4, 3, 2, 1 digits, then
  ``*****``; 32,576 codes present, drawn Zipf-like), a birth date (5-level hierarchy over
  5,676 days: day, month, year, 5 years, ``*``) and sex. ARX's times on it are in
  ``bench/arx_zip_grid.csv``, measured by ``bench/arx/ArxGrid.java`` (median of 5
  ``anonymize()`` after a warm-up, the JVM warmed by a first pass over the grid) on the
  machine and date written in its first line; pass
  ``--arx-classpath`` to measure them again (ARX 3.9.2 compiled from its sources, with
  its ``lib/ant`` jars, on the class path); that also measures ARX on adult on this
  machine (``bench/arx_adult_grid_here.csv``), shown beside ARX's own adult figures.
  (ARX's ``src/main`` at commit aacd487 compiles with ``javac -cp 'lib/ant/*'`` once
  ``ARXCertificate`` and ``Watermark`` are left out and one-line stubs stand for
  pdfbox's ``PDFont`` and hadoop's ``Writable``, whose jars are not in ARX's
  repository; the certificate is not used here.)

Per configuration, each a median over ``--runs`` runs, in one process per data set after
the compiled code is loaded (the data read into memory first, never timed):

* **seconds**: the ``seconds`` of the search result (``optimal_search``), on a problem
  that has been searched before (what the problem keeps for its later searches, as ARX
  keeps its data handle: the lattice, static bounds, pair profiles, working memory);
* **first**: the same for the first search of a freshly built problem (it pays for all
  of that);
* **end to end**: encoding + hierarchy lookups + building the problem + its first search
  (what the ``search`` command reports as ``seconds``).

Ratios are ours / ARX's; the goal is seconds <= 0.25 x ARX's time everywhere.
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
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
ARX = ROOT.parent / "shared" / "data" / "arx"
WORK = Path("/tmp/deidweb-bench-grid")
OUT = ROOT / "docs" / "bench" / "grid.md"
ARX_ZIP = ROOT / "bench" / "arx_zip_grid.csv"
ARX_HERE = ROOT / "bench" / "arx_adult_grid_here.csv"
ARX_HARNESS = ROOT / "bench" / "arx" / "ArxGrid.java"
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
ZIP_QUASI = ["zip", "birthdate", "sex"]


def data_sets() -> dict[str, tuple[Path, str, list[str]]]:
    """name -> (data file, hierarchy file prefix, quasi-identifiers)."""
    return {
        "adult": (ARX / "adult.csv", str(ARX / "adult_hierarchy_"), ADULT_QUASI),
        "zip": (WORK / "zip.csv", str(WORK / "zip_hierarchy_"), ZIP_QUASI),
    }


def generate_zip(rows: int = 50_000, seed: int = 17) -> None:
    """The ZIP-like case (module docstring), in ARX's formats (';', hierarchies without
    header)."""
    if (WORK / "zip.csv").exists():
        return
    WORK.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    zips = [f"{i:05d}" for i in range(100_000)]
    (WORK / "zip_hierarchy_zip.csv").write_text(
        "".join(f"{z};{z[:4]}*;{z[:3]}**;{z[:2]}***;{z[:1]}****;*****\n" for z in zips)
    )
    first = dt.date(1980, 1, 1)
    days = [first + dt.timedelta(days=i) for i in range(5_676)]

    def band(year: int) -> str:
        return f"{year - year % 5}-{year - year % 5 + 4}"

    (WORK / "zip_hierarchy_birthdate.csv").write_text(
        "".join(f"{d.isoformat()};{d:%Y-%m};{d.year};{band(d.year)};*\n" for d in days)
    )
    (WORK / "zip_hierarchy_sex.csv").write_text("female;*\nmale;*\n")
    weights = 1.0 / np.arange(1, 100_001) ** 0.6
    weights = weights[rng.permutation(100_000)]
    weights /= weights.sum()
    z = rng.choice(100_000, size=rows, p=weights)
    b = rng.integers(0, len(days), rows)
    s = rng.integers(0, 2, rows)
    frame = pl.DataFrame(
        {
            "zip": [zips[i] for i in z],
            "birthdate": [days[i].isoformat() for i in b],
            "sex": ["female" if v else "male" for v in s],
        }
    )
    frame.write_csv(WORK / "zip.csv", separator=";")


def read_arx(path: Path) -> dict[tuple[str, int, float], tuple[str, float]]:
    """(metric, k, limit) -> (ARX's score as written, ARX's median seconds)."""
    out = {}
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    for row in csv.DictReader(lines):
        key = (row["metric"], int(row["k"]), float(row["suppression_limit"]))
        out[key] = (row["arx_information_loss"], float(row["arx_anonymize_ms_median"]) / 1000)
    return out


def worker(name: str, runs: int) -> None:
    """Every configuration on one data set, in this process; one JSON line each."""
    from apps.engine.criteria import KAnonymity
    from apps.engine.frame import encode
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search import optimal_search, problem_from_encoded
    from apps.engine.search.preload import load_compiled_code

    load_compiled_code()
    path, prefix, quasi = data_sets()[name]
    hierarchies = {q: read_arx_csv(f"{prefix}{q}.csv", q) for q in quasi}
    data = pl.read_csv(path, separator=";", infer_schema=False)

    def prepare() -> tuple[object, object]:
        encoded = encode(data, quasi)
        lookups = [
            hierarchies[q].lookup(d) for q, d in zip(quasi, encoded.dictionaries, strict=True)
        ]
        return encoded, lookups

    encoded, lookups = prepare()
    warm = problem_from_encoded(encoded, lookups)  # type: ignore[arg-type]
    optimal_search(warm, KAnonymity(2), suppression_limit=0.0)  # (searched before)
    for metric in METRICS:
        for k in KS:
            for limit in LIMITS:
                criterion = KAnonymity(k)
                first, ends = [], []
                for _ in range(runs):
                    started = time.perf_counter()
                    enc, lks = prepare()
                    fresh = problem_from_encoded(enc, lks)  # type: ignore[arg-type]
                    result = optimal_search(
                        fresh, criterion, metric=metric, suppression_limit=limit
                    )
                    ends.append(time.perf_counter() - started)
                    first.append(result.seconds)
                seconds = []
                for _ in range(runs):
                    result = optimal_search(warm, criterion, metric=metric, suppression_limit=limit)
                    seconds.append(result.seconds)
                solution = result.solution
                assert solution is not None
                print(
                    json.dumps(
                        {
                            "metric": metric,
                            "k": k,
                            "limit": limit,
                            "seconds": statistics.median(seconds),
                            "first": statistics.median(first),
                            "end_to_end": statistics.median(ends),
                            "loss": solution.information_loss,
                            "levels": list(solution.levels),
                            "suppressed": solution.suppressed_rows,
                            "nodes": result.nodes_evaluated,
                            "lattice": result.nodes_total,
                            "rows": warm.rows,
                            "tuples": len(warm.counts),
                        }
                    ),
                    flush=True,
                )


def run_worker(name: str, runs: int) -> list[dict[str, object]]:
    cmd = [sys.executable, __file__, "--worker", name, "--runs", str(runs)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def measure_arx(classpath: str, runs: int) -> None:
    """Compile the harness and measure ARX on both data sets: the ZIP-like case into
    ``bench/arx_zip_grid.csv``, adult into ``bench/arx_adult_grid_here.csv`` (to compare
    this machine, as loaded then, with the machine of ARX's own adult figures)."""
    build = WORK / "arx-harness"
    build.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["javac", "-nowarn", "-cp", classpath, "-d", str(build), str(ARX_HARNESS)], check=True
    )
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    configs = [f"{m},{k},{s}" for m in METRICS for k in KS for s in LIMITS]
    for name, out in (("zip", ARX_ZIP), ("adult", ARX_HERE)):
        path, prefix, quasi = data_sets()[name]
        load = os.getloadavg()[0]
        done = subprocess.run(
            ["java", "-cp", f"{build}{os.pathsep}{classpath}", "ArxGrid", str(path), prefix]
            + [",".join(quasi), str(runs), *configs],
            capture_output=True,
            text=True,
            check=True,
        )
        header = (
            f"# ARX 3.9.2 on {name} ({path.name}), measured by bench/arx/ArxGrid.java on "
            f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {machine()}; load average "
            f"{load:.2f} at start; {java.splitlines()[0] if java else 'java'}"
        )
        out.write_text(header + "\n" + done.stdout.strip() + "\n")
        print(f"wrote {out}")


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


def relative(ours: float, theirs: str) -> str:
    """Our score against ARX's, as a relative difference (ARX prints Java doubles)."""
    try:
        value = float(theirs)
    except ValueError:
        return "–"
    if value == ours:
        return "same"
    return f"{abs(ours - value) / max(abs(value), 1e-300):.0e}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=["adult", "zip"])
    parser.add_argument("--worker")
    parser.add_argument("--arx-classpath", help="measure ARX on the ZIP-like case first")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.runs)
        return
    generate_zip()
    if args.arx_classpath:
        measure_arx(args.arx_classpath, args.runs)
    started = dt.datetime.now(dt.UTC)
    load_before = os.getloadavg()
    references = {"adult": read_arx(ARX / "arx_adult_grid.csv"), "zip": read_arx(ARX_ZIP)}
    names = [args.only] if args.only else ["adult", "zip"]
    results = {}
    for name in names:
        results[name] = run_worker(name, args.runs)
        for r in results[name]:
            print(name, r, flush=True)
    load_after = os.getloadavg()
    arx_zip_line = ARX_ZIP.read_text().splitlines()[0].lstrip("# ")
    lines = [
        "# ARX's k-anonymity grid (issue #17, part 3)",
        "",
        f"- date: {started:%Y-%m-%d %H:%M} UTC",
        f"- machine: {machine()}; load average (1/5/15 min) before "
        f"{' / '.join(f'{v:.2f}' for v in load_before)}, after "
        f"{' / '.join(f'{v:.2f}' for v in load_after)}",
        f"- Python {platform.python_version()}, polars {pl.__version__}, numpy {np.__version__}",
        f"- command: `python bench/bench_grid.py --runs {args.runs}` (median of "
        f"{args.runs} runs per configuration)",
        "- ARX: adult, ARX 3.9.2's own figures (`../shared/data/arx/arx_adult_grid.csv`: "
        "OpenJDK 17, a 2-core machine of this kind); ZIP-like case, "
        f"`bench/arx_zip_grid.csv` ({arx_zip_line})",
        "",
        "*seconds* = the search result's `seconds` on a problem searched before (the "
        "lattice, static bounds, pair profiles and working memory are kept with the "
        "problem, as ARX keeps its data handle); *first* = the first search of a freshly "
        "built problem; *end to end* = encoding + hierarchy lookups + building the problem "
        "+ that first search (the `search` command's `seconds`). ARX = median wall time "
        "of `ARXAnonymizer.anonymize()`. Ratios are ours / ARX's (goal: seconds <= 0.25). "
        "*score* compares our optimum's information loss with ARX's. *ARX here* (adult): "
        "ARX measured on this machine by the same harness as the ZIP-like case "
        "(`bench/arx_adult_grid_here.csv`), to compare the two machines.",
        "",
    ]
    here = read_arx(ARX_HERE) if ARX_HERE.exists() else {}
    for name in names:
        ref = references[name]
        rows = results[name]
        first_row = rows[0]
        calibrate = name == "adult" and bool(here)
        lines += [
            f"## {name}: {first_row['rows']:,} rows, {first_row['tuples']:,} distinct tuples, "
            f"lattice of {first_row['lattice']:,} nodes",
            "",
            "| metric | k | suppression | seconds | first | end to end | ARX s | ratio | "
            "first ratio | end-to-end ratio | "
            + ("ARX here s | " if calibrate else "")
            + "nodes | levels | suppressed | score |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
            + ("---:|" if calibrate else "")
            + "---:|---|---:|---|",
        ]
        worst: dict[str, tuple[float, str]] = {}
        for r in rows:
            key = (str(r["metric"]), int(r["k"]), float(r["limit"]))  # type: ignore[arg-type]
            score, arx_s = ref[key]
            ratios = {
                c: float(r[c]) / arx_s  # type: ignore[arg-type]
                for c in ("seconds", "first", "end_to_end")
            }
            label = f"{key[0]}, k = {key[1]}, {key[2]:.0%}"
            for c, v in ratios.items():
                if c not in worst or v > worst[c][0]:
                    worst[c] = (v, label)
            lines.append(
                f"| {key[0]} | {key[1]} | {key[2]:.0%} | {float(r['seconds']):.4f} | "  # type: ignore[arg-type]
                f"{float(r['first']):.4f} | {float(r['end_to_end']):.4f} | {arx_s:.4f} | "  # type: ignore[arg-type]
                f"{ratios['seconds']:.3f} | {ratios['first']:.3f} | "
                f"{ratios['end_to_end']:.3f} | "
                + (f"{here[key][1]:.4f} | " if calibrate else "")
                + f"{r['nodes']:,} | {r['levels']} | "
                f"{r['suppressed']:,} | {relative(float(r['loss']), score)} |"  # type: ignore[arg-type]
            )
        lines += [
            "",
            f"Worst ratio on {name}: **seconds {worst['seconds'][0]:.3f}** "
            f"({worst['seconds'][1]}); first {worst['first'][0]:.3f} ({worst['first'][1]}); "
            f"end to end {worst['end_to_end'][0]:.3f} ({worst['end_to_end'][1]}).",
            "",
        ]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
