"""docs/bench/load.md: the machine, the per-kind latency figures of the measured window and
of the ramp, the jobs, and the verdict against the target."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from bench.load.jobs import Jobs
from bench.machine import machine

TARGET_P95_MS = 500


def summarize(
    times: dict[str, list[float]], failures: dict[str, list[str]]
) -> list[dict[str, Any]]:
    """One row per kind (and "all"): count, failures, p50/p95/p99/max in ms."""
    import numpy as np

    rows = []
    for name in [*sorted(times), "all"]:
        values = (
            np.array([t for v in times.values() for t in v])
            if name == "all"
            else np.array(times[name])
        )
        failed = (
            sum(len(v) for v in failures.values()) if name == "all" else len(failures.get(name, []))
        )
        if not values.size:
            continue
        p50, p95, p99 = np.percentile(values, [50, 95, 99])
        rows.append(
            {
                "name": name,
                "requests": int(values.size),
                "failures": failed,
                "p50": p50,
                "p95": p95,
                "p99": p99,
                "max": float(values.max()),
            }
        )
    return rows


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| kind | requests | failures | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        name = "**all**" if r["name"] == "all" else r["name"]
        lines.append(
            f"| {name} | {r['requests']:,} | {r['failures']:,} | {r['p50']:.0f} | {r['p95']:.0f} |"
            f" {r['p99']:.0f} | {r['max']:.0f} |"
        )
    return lines


def markdown(
    args: argparse.Namespace,
    record: dict[str, Any],
    jobs: Jobs,
    before: str,
    after: str,
    counts: dict[str, dict[str, int]],
) -> str:
    measured = summarize(record["times"]["measured"], record["failures"]["measured"])
    ramp = summarize(record["times"]["ramp"], record["failures"]["ramp"])
    total = next(r for r in measured if r["name"] == "all")
    opened, closed = record["window"]
    window = closed - opened
    verdict = "met" if total["p95"] < TARGET_P95_MS and not total["failures"] else "missed"
    lines = [
        "# Load: 50 users while jobs run" if args.users == 50 else f"# Load: {args.users} users",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {machine()}; load average (1/5/15 min) before {before}, at the end of the"
        f" measured window {after}",
        f"- command: `python bench/bench_load.py --users {args.users} --duration {args.duration}"
        f" --jobs {args.jobs}`",
        f"- servers: gunicorn {args.gunicorn_workers} workers × {args.gunicorn_threads} threads"
        " (deidweb/gunicorn.conf.py, production settings, HTTP on 127.0.0.1), one Celery worker"
        f" (concurrency {args.worker_concurrency}) on Redis, PostgreSQL database `deidweb_load`",
        f"- jobs: {jobs.count} started in the measured window ({args.jobs} searches, then the"
        f" apply of each search that succeeded), {len(jobs.failures)} failed; job durations"
        " (queue + run)"
        + (
            f" {min(jobs.durations):.1f}–{max(jobs.durations):.1f} s"
            if jobs.durations
            else " none finished"
        ),
        "- every job of the run by kind, final status: "
        + "; ".join(
            f"{kind} " + ", ".join(f"{n} {status}" for status, n in sorted(by.items()))
            for kind, by in sorted(counts.items())
        ),
        "",
        f"Measured window: {window:.0f} s, from the moment the last of the {args.users} users"
        " had signed in, every user browsing, uploading and polling, the jobs running.",
        "",
        *_table(measured),
        "",
        f"Every request of the window ({total['requests']:,}): p50 {total['p50']:.0f} ms, p95"
        f" {total['p95']:.0f} ms, p99 {total['p99']:.0f} ms, {total['failures']} failed. Target"
        f" p95 < {TARGET_P95_MS} ms and no errors: **{verdict}**.",
        "",
        f"Ramp (not in the figures above): the {args.users} users start {args.spawn_rate} per"
        " second and each signs in once; the sign-in POST is slow by design (the password hash,"
        " PBKDF2, is meant to cost CPU).",
        "",
        *_table(ramp),
        "",
        f"Each of the {args.users} locust users signs in with its own account, then browses"
        " the organization's pages, polls job pages (page, progress fragment and job API) and"
        " uploads a 200-row CSV through the upload form now and then (the upload's own job"
        f" then runs on the worker too). Wait between tasks {args.wait_min:g}–{args.wait_max:g}"
        " s. Locust itself runs on the same 2 CPUs as the servers and the worker. Before the"
        " run, 20 s of the same traffic from 16 users warm the servers up (not measured).",
        "",
    ]
    failures = record["failures"]["measured"]
    if failures:
        lines += ["Request failures (first of each kind):", ""]
        lines += [f"- {name}: {len(v)} × {v[0]}" for name, v in sorted(failures.items())]
        lines.append("")
    if jobs.failures:
        lines += ["Job failures:", "", *(f"- {f}" for f in jobs.failures), ""]
    return "\n".join(lines)
