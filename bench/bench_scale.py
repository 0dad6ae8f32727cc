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
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import load_average, machine  # noqa: E402 (the root is on sys.path first)

ARX = ROOT.parent / "shared" / "data" / "arx"
QUASI = [
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
STEPS = ["generate", "upload", "profile", "measure", "search", "apply"]
K = 5
SUPPRESSION = 0.05
METRIC = "loss"


def peak_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


# --------------------------------------------------------------------------- steps (workers)


def step_generate(data: Path, rows: int, chunk_rows: int, seed: int) -> dict[str, Any]:
    """Write `rows` rows to `data`, `chunk_rows` at a time (memory: one chunk)."""
    import numpy as np
    import polars as pl
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    base = pl.read_csv(ARX / "adult.csv", separator=";", infer_schema=False).select(QUASI)
    columns = [base.get_column(q).to_arrow().cast(pa.string()) for q in QUASI]
    tmp = data.with_suffix(".part")
    schema = pa.schema([("record_id", pa.int64()), *((q, pa.string()) for q in QUASI)])
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for number, start in enumerate(range(0, rows, chunk_rows)):
            n = min(chunk_rows, rows - start)
            rng = np.random.default_rng([seed, number])
            picked = rng.integers(0, base.height, n)
            which = rng.integers(0, len(QUASI), n)
            hit = rng.random(n) < 0.5
            arrays = [pa.array(np.arange(start, start + n, dtype=np.int64))]
            for j, values in enumerate(columns):
                index = picked.copy()
                mask = hit & (which == j)
                index[mask] = rng.integers(0, base.height, int(mask.sum()))
                arrays.append(pc.take(values, pa.array(index)))
            table = pa.Table.from_arrays(arrays, schema=schema)
            writer.write_table(table, row_group_size=1_000_000)
            del arrays, table
    # The file a custodian would upload: the same rows as CSV text, written by streaming.
    csv_tmp = data.with_suffix(".csv.part")
    pl.scan_parquet(tmp).sink_csv(csv_tmp)
    csv_tmp.rename(data.with_suffix(".csv"))
    tmp.rename(data)
    return {
        "rows": rows,
        "file_mib": data.stat().st_size / 1024**2,
        "csv_mib": data.with_suffix(".csv").stat().st_size / 1024**2,
    }


def step_upload(data: Path, work: Path) -> dict[str, Any]:
    """What the upload job does with the CSV: detect encoding and delimiter, check every
    record line by line, convert to Parquet by streaming (apps.datasets.ingest)."""
    from apps.datasets.ingest import convert_to_parquet

    result = convert_to_parquet(data.with_suffix(".csv"), "scale.csv", work / "uploaded.parquet")
    return {
        "rows": result.rows,
        "columns": len(result.columns),
        "encoding": result.encoding,
        "delimiter": result.delimiter,
        "file_mib": (work / "uploaded.parquet").stat().st_size / 1024**2,
    }


def step_profile(data: Path) -> dict[str, Any]:
    from apps.datasets.profiling import profile_parquet

    profile = profile_parquet(data)
    return {
        "rows": profile.rows,
        "columns": len(profile.columns),
        "types": {c.name: c.inferred_type for c in profile.columns},
        "distinct": {c.name: c.distinct for c in profile.columns},
    }


def step_measure(data: Path, work: Path) -> dict[str, Any]:
    from apps.engine.frame import encode
    from apps.engine.reading import read_table
    from apps.engine.risk import encoded_class_sizes, risk_profile

    encoded = encode(read_table(data), QUASI)
    profile = risk_profile(encoded_class_sizes(encoded))
    encoded.tuples.write_parquet(work / "tuples.parquet")
    (work / "dictionaries.json").write_text(
        json.dumps(
            {"rows": encoded.rows, "dictionaries": [d.to_list() for d in encoded.dictionaries]}
        )
    )
    return {
        "rows": profile.rows,
        "distinct_tuples": encoded.distinct_tuples,
        "uniques": profile.uniques,
        "max_risk": profile.max_risk,
        "average_risk": round(profile.average_risk, 6),
    }


def _problem(work: Path) -> tuple[Any, list[Any], list[Any]]:
    import polars as pl

    from apps.engine.encoded import EncodedData
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search import problem_from_encoded

    saved = json.loads((work / "dictionaries.json").read_text())
    dictionaries = [
        pl.Series(q, values, dtype=pl.String)
        for q, values in zip(QUASI, saved["dictionaries"], strict=True)
    ]
    encoded = EncodedData(
        quasi=tuple(QUASI),
        dictionaries=tuple(dictionaries),
        tuples=pl.read_parquet(work / "tuples.parquet"),
        rows=int(saved["rows"]),
    )
    hierarchies = {q: read_arx_csv(ARX / f"adult_hierarchy_{q}.csv", q) for q in QUASI}
    lookups = [hierarchies[q].lookup(d) for q, d in zip(QUASI, dictionaries, strict=True)]
    return problem_from_encoded(encoded, lookups), lookups, dictionaries


def step_search(work: Path) -> dict[str, Any]:
    from apps.engine.criteria import KAnonymity
    from apps.engine.search import optimal_search
    from apps.engine.search.preload import load_compiled_code

    started = time.perf_counter()
    load_compiled_code()
    loaded = time.perf_counter() - started
    problem, _, _ = _problem(work)
    result = optimal_search(problem, KAnonymity(K), metric=METRIC, suppression_limit=SUPPRESSION)
    assert result.solution is not None, "no solution"
    levels = {q: int(level) for q, level in zip(QUASI, result.solution.levels, strict=True)}
    (work / "levels.json").write_text(json.dumps(levels))
    return {
        "tuples": len(problem.counts),
        "nodes_evaluated": result.nodes_evaluated,
        "levels": list(result.solution.levels),
        "suppressed_rows": result.solution.suppressed_rows,
        "search_seconds": round(result.seconds, 3),
        "load_seconds": round(loaded, 2),
    }


def step_apply(data: Path, work: Path) -> dict[str, Any]:
    from apps.engine.apply import apply_solution
    from apps.engine.criteria import KAnonymity
    from apps.engine.reading import read_table

    problem, lookups, dictionaries = _problem(work)
    levels = json.loads((work / "levels.json").read_text())
    out = work / "release.parquet"
    started = time.perf_counter()
    result = apply_solution(
        read_table(data),
        problem=problem,
        lookups=lookups,
        dictionaries=dictionaries,
        levels=levels,
        criterion=KAnonymity(K),
        out=out,
        suppression_limit=SUPPRESSION,
        direct={"record_id": "hmac"},
    )
    m = result.measure
    figures = {
        "rows_in": m.rows_in,
        "rows_out": m.rows_out,
        "suppressed_rows": m.suppressed_rows,
        "classes": m.risk.equivalence_classes,
        "smallest_class": m.risk.smallest_class,
        "passes": m.passes,
        "release_mib": out.stat().st_size / 1024**2,
        "apply_seconds": round(time.perf_counter() - started, 1),
    }
    out.unlink()
    return figures


def worker(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "deidweb.settings.local")
    # The kernels `make install` compiled (Django's settings point numba there too).
    os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / "var" / "numba"))
    started = time.perf_counter()
    uploaded = args.work / "uploaded.parquet"
    if args.step == "generate":
        details = step_generate(args.data, args.rows, args.chunk_rows, args.seed)
    elif args.step == "upload":
        details = step_upload(args.data, args.work)
    elif args.step == "profile":
        details = step_profile(uploaded)
    elif args.step == "measure":
        details = step_measure(uploaded, args.work)
    elif args.step == "search":
        details = step_search(args.work)
    else:
        details = step_apply(uploaded, args.work)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_mib": peak_mib(), "details": details}))


# --------------------------------------------------------------------------- driver


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def run_step(step: str, args: argparse.Namespace, data: Path, work: Path) -> dict[str, Any]:
    """Run one step in a fresh process, stopped if it exceeds the memory or time budget."""
    command = [
        sys.executable,
        __file__,
        "--step",
        step,
        "--rows",
        str(args.rows),
        "--chunk-rows",
        str(args.chunk_rows),
        "--seed",
        str(args.seed),
        "--data",
        str(data),
        "--work",
        str(work),
    ]
    limit = args.max_rss_gib * 1024
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    sampled = 0.0
    stopped = ""
    while process.poll() is None:
        sampled = max(sampled, _rss_mib(process.pid))
        if sampled > limit:
            stopped = f"stopped: resident memory above {args.max_rss_gib} GiB"
        elif time.perf_counter() - started > args.step_timeout:
            stopped = f"stopped: longer than {args.step_timeout} s"
        if stopped:
            process.send_signal(signal.SIGKILL)
            process.wait()
            break
        time.sleep(0.2)
    output = process.stdout.read() if process.stdout else ""
    if stopped or process.returncode != 0:
        return {"error": stopped or f"exit status {process.returncode}", "peak_mib": sampled}
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def _detail(step: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return f"**{r['error']}**"
    d = r["details"]
    if step == "generate":
        return (
            f"{d['rows']:,} rows, CSV {d['csv_mib']:,.0f} MiB (and Parquet {d['file_mib']:,.0f}"
            " MiB, zstd)"
        )
    if step == "upload":
        return (
            f"{d['rows']:,} rows × {d['columns']} columns checked and converted"
            f" ({d['encoding']}, delimiter {d['delimiter']!r}); Parquet {d['file_mib']:,.0f} MiB"
        )
    if step == "profile":
        types = ", ".join(sorted({t for t in d["types"].values()}))
        return f"{d['rows']:,} rows, {d['columns']} columns profiled ({types})"
    if step == "measure":
        return (
            f"{d['distinct_tuples']:,} distinct tuples, {d['uniques']:,} unique rows, "
            f"average risk {d['average_risk']}"
        )
    if step == "search":
        return (
            f"{d['nodes_evaluated']:,} nodes evaluated ({d['search_seconds']} s in the search,"
            f" {d['load_seconds']} s loading the compiled kernels), "
            f"levels {d['levels']}, {d['suppressed_rows']:,} rows suppressed"
        )
    return (
        f"{d['rows_out']:,} rows written ({d['suppressed_rows']:,} suppressed), "
        f"{d['classes']:,} classes, smallest {d['smallest_class']}, "
        f"{'passes' if d['passes'] else 'FAILS'} k = {K}; release {d['release_mib']:,.0f} MiB"
    )


def markdown(rows: int, results: dict[str, dict[str, Any]], command: str, before: str) -> str:
    import polars as pl

    title = f"{rows / 1e6:g} million rows" if rows >= 1_000_000 else f"{rows:,} rows"
    lines = [
        f"# {title}",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}; load average (1/5/15 min) before {before}, after "
        f"{load_average()}",
        f"- Python {platform.python_version()}, polars {pl.__version__}",
        f"- command: `{command}`",
        "",
        "| step | wall s | peak RSS MiB | result |",
        "|---|---:|---:|---|",
    ]
    for step in STEPS:
        if step not in results:
            continue
        r = results[step]
        seconds = f"{r['seconds']:.1f}" if "seconds" in r else "–"
        lines.append(f"| {step} | {seconds} | {r['peak_mib']:,.0f} | {_detail(step, r)} |")
    lines += [
        "",
        f"Data: {rows:,} rows × 10 columns (a record number and the 9 quasi-identifiers of"
        " ARX's adult data as text), generated seeded, chunk by chunk, into one Parquet file,"
        " then written out as CSV. Each step runs in a fresh process; peak RSS is its VmHWM"
        " (Python, polars and the file cache it maps included). upload = `convert_to_parquet`"
        " of the CSV (encoding and delimiter detected, every record checked line by line,"
        " streamed to Parquet; the later steps read that file); profile = `profile_parquet`"
        " (all 10 columns);"
        " measure = `encode` + `risk_profile` (one streaming group-by to the distinct tuples);"
        f" search = `optimal_search` on the distinct tuples (k = {K}, {SUPPRESSION:.0%}"
        f" suppression, metric {METRIC}, ARX's adult hierarchies; reading the saved distinct"
        " tuples and loading the compiled kernels included); apply = `apply_solution`"
        " (record number replaced by its keyed pseudonym, HMAC-SHA-256, computed batch by"
        " batch; generalization, suppression of small classes by a streaming"
        " count of the generalized classes and a semi-join, out-of-core shuffle through"
        " temporary Parquet buckets, then the re-measure of the written file).",
        "",
        "The machine is shared with other sessions (see the load average): times include that"
        " contention.",
        "",
    ]
    return "\n".join(lines)


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
