"""The load test's PostgreSQL database: created and dropped, and its jobs counted."""

from __future__ import annotations

import subprocess


def psql(url: str, sql: str) -> None:
    admin = url.rsplit("/", 1)[0] + "/postgres"
    subprocess.run(["psql", admin, "-v", "ON_ERROR_STOP=1", "-qc", sql], check=True)


def job_counts(url: str) -> dict[str, dict[str, int]]:
    """Every job of the run by kind and final status (the uploads' own jobs included)."""
    out = subprocess.run(
        ["psql", url, "-Atc", "SELECT kind, status, count(*) FROM jobs_job GROUP BY 1, 2"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    counts: dict[str, dict[str, int]] = {}
    for line in out.splitlines():
        kind, status, count = line.split("|")
        counts.setdefault(kind, {})[status] = int(count)
    return counts
