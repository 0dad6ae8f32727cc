"""Benchmark of `measure` (read → encode → Step 4 figures).

    .venv/bin/python bench/bench_measure.py            # adult + 3M rows, writes docs/bench/measure.md
    .venv/bin/python bench/bench_measure.py --big      # also 30M rows (a few minutes)

Cases: the ARX adult data (in-process, 9 QIs), and synthetic Parquet files of 3M
and 30M rows with 8 quasi-identifiers of realistic cardinalities, generated
(seeded) into --data-dir, never into the repository.  Each case runs in its own
subprocess so that its peak memory (VmHWM) is its own.  The baseline is one
polars pass over the same rows already stored as 8 integer codes: pack them
into a u64 key and group — the floor any encoding pass has to pay.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_search import peak_mib  # (bench/ is on sys.path: run as a script)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import load_average, machine  # noqa: E402 (the root is on sys.path first)

ADULT = ROOT.parent / "shared" / "data" / "arx" / "adult.csv"
ADULT_QUASI = (
    "sex,age,race,marital-status,education,native-country,workclass,occupation,salary-class"
)
SYNTHETIC_QUASI = ["age", "sex", "fsa", "marital", "education", "ethnicity", "language", "income"]
# Bits per code in the baseline's packed key: 100 ages, 2 sexes, 1600 FSAs, 7, 16, 8, 12, 12.
BASELINE_BITS = [7, 1, 11, 3, 4, 3, 4, 4]

TARGETS = {"adult": 0.040, "synthetic 3M": 0.5}


# --------------------------------------------------------------------------- data


def generate(rows: int, directory: Path, seed: int = 20240601) -> tuple[Path, Path]:
    """Write `synthetic_<rows>.parquet` (typed as a real extract) and its integer-code twin."""
    import numpy as np
    import polars as pl

    data_path = directory / f"synthetic_{rows}.parquet"
    codes_path = directory / f"synthetic_{rows}_codes.parquet"
    if data_path.exists() and codes_path.exists():
        return data_path, codes_path
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(41, 22, rows), 0, 99).astype(np.int16)
    sex = rng.integers(0, 2, rows).astype(np.uint8)
    # 1600 forward sortation areas with Zipf-like populations, as Canadian 3-char postal codes.
    popularity = 1 / np.arange(1, 1601) ** 0.8
    fsa = rng.choice(1600, rows, p=popularity / popularity.sum()).astype(np.uint16)
    letters = np.array(list("ABCEGHJKLMNPRSTVXY"))
    fsa_text = np.array(
        [f"{letters[i % 18]}{(i // 18) % 10}{letters[(i // 180) % 18]}" for i in range(1600)]
    )
    adult = age >= 18
    marital = np.where(adult, rng.choice(7, rows, p=[0.3, 0.45, 0.1, 0.04, 0.05, 0.03, 0.03]), 0)
    education = np.where(adult, rng.integers(4, 16, rows), np.minimum(age // 2, 8)).astype(np.uint8)
    ethnicity = rng.choice(8, rows, p=[0.6, 0.1, 0.08, 0.07, 0.05, 0.04, 0.03, 0.03]).astype(
        np.uint8
    )
    language = rng.choice(12, rows, p=[0.55, 0.22, *([0.023] * 10)]).astype(np.uint8)
    income = np.clip(education // 2 + rng.integers(-2, 5, rows), 0, 11).astype(np.uint8)
    codes = {
        "age": age.astype(np.uint16),
        "sex": sex,
        "fsa": fsa,
        "marital": marital.astype(np.uint8),
        "education": education,
        "ethnicity": ethnicity,
        "language": language,
        "income": income,
    }
    pl.DataFrame(codes).write_parquet(codes_path, row_group_size=1_000_000)
    typed = pl.DataFrame(
        {
            **codes,
            "age": age,
            "sex": pl.Series(np.array(["F", "M"])[sex]).cast(pl.Categorical),
            "fsa": pl.Series(fsa_text[fsa]).cast(pl.Categorical),
        }
    ).select(SYNTHETIC_QUASI)
    typed.write_parquet(data_path, row_group_size=1_000_000)
    return data_path, codes_path


# --------------------------------------------------------------------------- workers


def run_measure(path: str, quasi: str, sep: str | None) -> int:
    from apps.engine import cli

    argv = ["measure", path, "--quasi", quasi] + (["--sep", sep] if sep else [])
    report = cli.measure(cli.build_parser().parse_args(argv))
    return int(report["equivalence_classes"])


def run_baseline(codes_path: str) -> int:
    import polars as pl

    key = pl.lit(0, dtype=pl.UInt64)
    shift = 0
    for column, bits in zip(SYNTHETIC_QUASI, BASELINE_BITS, strict=True):
        key = key + pl.col(column).cast(pl.UInt64) * pl.lit(1 << shift, dtype=pl.UInt64)
        shift += bits
    grouped = (
        pl.scan_parquet(codes_path)
        .select(key.alias("key"))
        .group_by("key")
        .agg(pl.len())
        .collect(engine="streaming")
    )
    return grouped.height


def worker(kind: str, path: str, codes: str | None, runs: int, quasi: str, sep: str | None) -> None:
    """Print one JSON line: timings (kind "time") or peak memory of one run (kind "memory").

    Timing runs alternate measure and baseline in one process, so that a change of
    machine load between them does not bias the ratio.
    """
    if kind == "memory":
        classes = run_measure(path, quasi, sep) if codes is None else run_baseline(codes)
        print(json.dumps({"classes": classes, "peak_mib": peak_mib()}))
        return
    classes = run_measure(path, quasi, sep)  # warm-up: imports, file cache
    if codes:
        run_baseline(codes)
    measured: list[float] = []
    baseline: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        run_measure(path, quasi, sep)
        measured.append(time.perf_counter() - started)
        if codes:
            started = time.perf_counter()
            run_baseline(codes)
            baseline.append(time.perf_counter() - started)
    print(json.dumps({"classes": classes, "seconds": measured, "baseline": baseline}))


def _call(*options: str) -> dict[str, Any]:
    command = [sys.executable, __file__, *options]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def spawn(
    path: Path, runs: int, quasi: str, sep: str | None = None, codes: Path | None = None
) -> dict[str, Any]:
    """Time a case (with its baseline, if `codes`), then measure peak memory in fresh processes."""
    common = ["--path", str(path), "--quasi", quasi] + (["--sep", sep] if sep else [])
    timing = _call(
        "--worker",
        "time",
        "--runs",
        str(runs),
        *common,
        *(["--codes", str(codes)] if codes else []),
    )
    result = {
        "classes": timing["classes"],
        "median": statistics.median(timing["seconds"]),
        "min": min(timing["seconds"]),
        "peak_mib": _call("--worker", "memory", *common)["peak_mib"],
    }
    if codes:
        result["baseline"] = {
            "median": statistics.median(timing["baseline"]),
            "min": min(timing["baseline"]),
            "peak_mib": _call("--worker", "memory", *common, "--codes", str(codes))["peak_mib"],
        }
    return result


# --------------------------------------------------------------------------- report


def markdown(
    results: list[tuple[str, int, dict[str, Any]]], command: str, runs: int, load_before: str
) -> str:
    import polars as pl

    lines = [
        "# `measure` benchmark",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}; load average (1/5/15 min) before {load_before}, after {load_average()}",
        f"- Python {platform.python_version()}, polars {pl.__version__}",
        f"- command: `{command}` ({runs} timed runs per case after a warm-up)",
        "",
        "| case | rows | classes | median s | min s | peak RSS MiB | baseline median s "
        "| baseline min s | ratio (median) | ratio (min) | target |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, rows, result in results:
        base = result.get("baseline")
        ratio = result["median"] / base["median"] if base else None
        best = result["min"] / base["min"] if base else None
        target = TARGETS.get(name)
        if target:
            goal = f"< {target} s: {'met' if result['median'] < target else 'missed'}"
        elif ratio is not None:
            goal = f"≤ 2× baseline: {'met' if ratio <= 2 else 'missed'}"
        else:
            goal = ""
        lines.append(
            f"| {name} | {rows:,} | {result['classes']:,} | {result['median']:.3f} | "
            f"{result['min']:.3f} | {result['peak_mib']:.0f} | "
            + (
                f"{base['median']:.3f} | {base['min']:.3f} | {ratio:.2f} | {best:.2f} | "
                if base
                else "– | – | – | – | "
            )
            + f"{goal} |"
        )
    lines += [
        "",
        "`measure` = `cli.measure` in-process: read the file lazily, encode the quasi-identifiers"
        " (a cheap min/max pass, then one streaming group-by on a packed 64-bit key), and compute"
        " every Step 4 figure.  The baseline reads the same rows stored as 8 integer codes, packs"
        " them into a u64 key and groups: the cost of the grouping alone.  Timed runs alternate"
        " measure and baseline in one process; peak RSS is measured in a fresh process per case"
        " (Python and polars included; baseline peak for the same rows: "
        + ", ".join(
            f"{name} {result['baseline']['peak_mib']:.0f} MiB"
            for name, _, result in results
            if result.get("baseline")
        )
        + ").  The synthetic data: age 0-99, sex, 1,600 three-character postal prefixes"
        " (Zipf-like), marital status 7, education 16, ethnicity 8, language 12, income band 12;"
        " sex and postal prefix stored as Categorical, the rest as small integers; seeded."
        "  Nearly every row is a distinct tuple: the worst case for the decoding that follows"
        " the group-by, which the baseline does not do.",
        "",
        "The machine is shared with other sessions, so absolute times move with its load;"
        " the ratio to a baseline timed in the same process, alternately, is the stabler figure.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="also the 30M-row case")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/deidweb-bench"))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "measure.md")
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument("--worker", choices=["time", "memory"], help=argparse.SUPPRESS)
    parser.add_argument("--codes", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--quasi", default="", help=argparse.SUPPRESS)
    parser.add_argument("--sep", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        sys.path.insert(0, str(ROOT))
        worker(args.worker, args.path, args.codes, args.runs, args.quasi, args.sep)
        return 0

    load_before = load_average()
    results: list[tuple[str, int, dict[str, Any]]] = []
    adult = spawn(ADULT, max(args.runs, 5), ADULT_QUASI, ";")
    results.append(("adult", 30_162, adult))
    print(f"adult: median {adult['median'] * 1000:.1f} ms", flush=True)
    sizes = [("synthetic 3M", 3_000_000)] + ([("synthetic 30M", 30_000_000)] if args.big else [])
    for name, rows in sizes:
        data_path, codes_path = generate(rows, args.data_dir)
        runs = args.runs
        measured = spawn(data_path, runs, ",".join(SYNTHETIC_QUASI), codes=codes_path)
        results.append((name, rows, measured))
        print(
            f"{name}: median {measured['median']:.3f} s, baseline {measured['baseline']['median']:.3f} s, "
            f"peak {measured['peak_mib']:.0f} MiB",
            flush=True,
        )
    command = "python bench/bench_measure.py" + (" --big" if args.big else "")
    report = markdown(results, command, args.runs, load_before)
    if args.no_write:
        print(report)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
