"""The scale bench's report (bench/bench_scale.py): docs/bench/scale.md (or ``--out``), the
machine and its load, then one row per step (wall time, peak resident memory, what the
step did or why it stopped) and what each step covers.
"""

from __future__ import annotations

import datetime as dt
import platform
from typing import Any

from bench.machine import load_average, machine
from bench.scale.data import METRIC, STEPS, SUPPRESSION, K


def _detail(step: str, r: dict[str, Any]) -> str:
    """The result column of one step: what it did, or why it stopped."""
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
    """The report of one run: ``results`` by step, ``before`` the load average at its start."""
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
