"""Benchmark of microaggregation (issue 23, item 7): MDAV's quadratic steps against the
O(n log n) form on one variable, and what that sets as the limit for several variables.

    .venv/bin/python bench/bench_microaggregation.py     # writes docs/bench/microaggregation.md

One variable, as Step 7 uses it: ages (integers 18–90, many ties) and incomes (continuous),
k = 3. The quadratic form (``mdav_groups``) is timed on up to 20,000 rows and extrapolated
by its square law; the O(n log n) form (``mdav_univariate``) is timed up to 10 million rows
and checked to give the same groups as the quadratic one where both ran. Two variables
together (the quadratic form only) are timed to set ``MULTIVARIATE_MAX_ROWS``.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from apps.engine.techniques.microaggregation import (  # noqa: E402
    MULTIVARIATE_MAX_ROWS,
    _standardised,
    mdav_groups,
    mdav_univariate,
)
from bench.machine import load_average, machine  # noqa: E402 (the root is on sys.path first)

K = 3
QUADRATIC_ROWS = (5_000, 10_000, 20_000)
FAST_ROWS = (10_000, 100_000, 1_000_000, 10_000_000)


def column(kind: str, n: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "age":
        return rng.integers(18, 91, n).astype(np.float64)
    return np.round(rng.lognormal(10.5, 0.6, n), 2)


def timed(call, *args):  # type: ignore[no-untyped-def]
    """CPU seconds of the call (this process's; single-threaded code, so what it takes on
    an idle core however loaded the machine is) and its result."""
    started = time.process_time()
    result = call(*args)
    return time.process_time() - started, result


def duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def main() -> int:
    load_before = load_average()
    lines = [
        "# `microaggregation` benchmark",
        "",
        f"- machine: {machine()}; load average before {load_before}",
        f"- date: {dt.date.today().isoformat()}; k = {K}; command: "
        "`.venv/bin/python bench/bench_microaggregation.py`",
        "",
        "CPU time of each call (single-threaded; the time on an idle core).",
        "",
        "| variable | rows | quadratic MDAV | O(n log n) MDAV | same groups |",
        "|---|---:|---:|---:|---|",
    ]
    for kind in ("age", "income"):
        quadratic: dict[int, float] = {}
        for n in QUADRATIC_ROWS:
            values = column(kind, n)
            seconds, slow = timed(mdav_groups, _standardised(values[:, None]), K)
            fast_seconds, fast = timed(mdav_univariate, values, K)
            quadratic[n] = seconds
            same = "yes" if slow.tolist() == fast.tolist() else "no"
            lines.append(f"| {kind} | {n:,} | {seconds:.2f} s | {fast_seconds:.3f} s | {same} |")
            print(lines[-1], flush=True)
        largest = max(quadratic)
        per_square = quadratic[largest] / largest**2
        for n in FAST_ROWS:
            if n in quadratic:
                continue
            fast_seconds, _ = timed(mdav_univariate, column(kind, n), K)
            estimate = per_square * n**2
            lines.append(
                f"| {kind} | {n:,} | ≈ {duration(estimate)} (extrapolated) | "
                f"{fast_seconds:.2f} s | — |"
            )
            print(lines[-1], flush=True)
    lines += ["", "Two variables together (age and income; quadratic MDAV only):", ""]
    lines += ["| rows | quadratic MDAV (CPU) |", "|---:|---:|"]
    two: dict[int, float] = {}
    for n in QUADRATIC_ROWS:
        matrix = np.column_stack([column("age", n), column("income", n, seed=8)])
        two[n], _ = timed(mdav_groups, _standardised(matrix), K)
        lines.append(f"| {n:,} | {two[n]:.2f} s |")
        print(lines[-1], flush=True)
    largest = max(two)
    at_limit = two[largest] / largest**2 * MULTIVARIATE_MAX_ROWS**2
    lines += [
        "",
        f"At the limit of {MULTIVARIATE_MAX_ROWS:,} rows (`MULTIVARIATE_MAX_ROWS`) the square law "
        f"gives about {at_limit / 60:.1f} min of CPU; above it several variables together are refused "
        "with a message, and each variable is aggregated on its own in O(n log n).",
        "",
        f"Load average after: {load_average()}.",
    ]
    out = ROOT / "docs" / "bench" / "microaggregation.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
