"""`make bench-scale`, second part: the product's own path on the same CSV, job by job.

    .venv/bin/python bench/bench_web_scale.py --csv /tmp/deidweb-bench-scale/scale_100000000_20260101.csv

Where bench/bench_scale.py times the engine's functions, this runs what a user's clicks
run, in one process against PostgreSQL (database `deidweb_webscale`, recreated): the upload
(the request part: the file streamed to storage), the upload's job (conversion and
profile), the classification's suggestions accepted, an assessment through the API (release
model, threshold, Step 4 risk job, context, Step 7 hierarchies, search job, choice, apply
job: release files, release measures, free-text scan, report figures). Jobs are run inline
with `job_execute`, as a worker runs them. A sampler thread records each phase's peak
resident memory (VmRSS every 0.1 s). Results go to docs/bench/web_scale.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
from base64 import b64encode
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))
from bench.load.api import LOW_ANSWERS  # noqa: E402 - the answers the load test uses too
from bench.machine import machine  # noqa: E402


def _rss_mib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


class Phases:
    """Wall time and peak resident memory of each phase of the run."""

    def __init__(self) -> None:
        self.peak = 0
        self.rows: list[tuple[str, float, int, str]] = []
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, _rss_mib())
            time.sleep(0.1)

    def run(self, name: str, fn: Callable[[], Any], note: Callable[[Any], str] = str) -> Any:
        self.peak = _rss_mib()
        started = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - started
        self.rows.append((name, seconds, self.peak, note(out)))
        print(f"{name:32s} {seconds:8.1f} s  peak {self.peak:,} MiB", flush=True)
        return out


def run(csv_path: Path) -> tuple[Phases, dict[str, Any]]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.files import File
    from django.test import Client

    from apps.accounts.models import Role
    from apps.accounts.services import membership_set, organization_create
    from apps.classification.models import Variable
    from apps.classification.services import variables_accept_suggestions
    from apps.datasets.services import dataset_upload
    from apps.jobs.claiming import job_execute
    from apps.jobs.models import Job

    phases = Phases()
    organization = organization_create(name="Scale", slug="scale")
    user = get_user_model().objects.create_user(username="analyst", password="unused")
    membership_set(organization=organization, user=user, role=Role.ANALYST)

    def upload() -> Any:
        with csv_path.open("rb") as handle:
            return dataset_upload(
                organization=organization,
                user=user,
                upload=File(handle, name=csv_path.name),  # type: ignore[arg-type]
                name="Scale",
            )

    dataset = phases.run("upload (the request)", upload, lambda d: f"{d.size_bytes:,} bytes stored")

    def ingest() -> Any:
        job_execute(job_id=str(dataset.profile_job_id))
        dataset.refresh_from_db()
        job = Job.objects.get(id=dataset.profile_job_id)
        assert dataset.status == "ready", (dataset.status, job.status, job.error)
        return dataset

    phases.run(
        "upload job (convert + profile)",
        ingest,
        lambda d: f"{d.rows:,} rows × {d.column_count} columns, ready",
    )
    phases.run(
        "classification (suggestions accepted)",
        lambda: variables_accept_suggestions(dataset=dataset, user=user),
        lambda _: ", ".join(
            f"{v.name}: {v.role}" for v in Variable.objects.filter(dataset=dataset).order_by("name")
        ),
    )
    client = Client()
    client.force_login(user)

    def api(method: str, path: str, body: Any = None) -> Any:
        answer = getattr(client, method)(
            path,
            data=None if body is None else json.dumps(body),
            content_type="application/json",
        )
        assert answer.status_code in (200, 201, 202), (path, answer.status_code, answer.content)
        return answer.json()

    created = api("post", "/api/v1/assessments/", {"dataset": str(dataset.id), "title": "Scale"})
    base = f"/api/v1/assessments/{created['id']}/"
    api("put", base + "release/", {"release_model": "public"})
    api("put", base + "threshold/", {"answers": LOW_ANSWERS})

    def job(path: str, body: Any = None) -> Any:
        started = api("post", base + path, body or {})
        job_execute(job_id=started["id"])
        done = Job.objects.get(id=started["id"])
        assert done.status == "succeeded", (path, done.status, done.error)
        return done

    phases.run("Step 4 risk job", lambda: job("risk/"), lambda _: "succeeded")
    api("put", base + "context/", {})
    phases.run(
        "Step 7 hierarchies (built from the data)",
        lambda: api("get", base + "hierarchies/"),
        lambda h: f"{len(h)} hierarchies",
    )
    from apps.assessments.models import Assessment

    def stored() -> Assessment:
        return Assessment.objects.get(id=created["id"])

    phases.run(
        "Step 7 search job",
        lambda: job("search/"),
        lambda _: (
            "{distinct_tuples:,} distinct tuples, {nodes_evaluated:,} of {nodes_total:,}"
            " nodes evaluated".format(**stored().search_result)
        ),
    )
    search = api("get", base + "search/")["result"]
    api("post", base + "choose/", {"levels": search["levels"]})
    phases.run(
        "Step 7 apply job",
        lambda: job("apply/"),
        lambda _: (
            "{rows_out:,} rows released, {suppressed_rows:,} suppressed; record_id"
            " {m}; meets the target: {passes}".format(
                m=stored().apply_result["masking"].get("record_id", {}).get("method", "kept"),
                **stored().apply_result,
            )
        ),
    )
    return phases, {"levels": search["levels"]}


def markdown(rows: int, phases: Phases, extra: dict[str, Any], command: str, before: str) -> str:
    title = f"{rows / 1e6:g} million rows" if rows >= 1_000_000 else f"{rows:,} rows"
    lines = [
        f"# The product's path on {title}",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- load average (1/5/15 min) before {before}, after "
        + " / ".join(f"{x:.2f}" for x in os.getloadavg()),
        f"- machine: {machine()}",
        f"- Python {platform.python_version()}; PostgreSQL, files on the local disk",
        f"- command: `{command}`",
        f"- levels chosen (the search's optimum): {extra['levels']}",
        "",
        "| phase | wall s | peak RSS MiB | result |",
        "|---|---:|---:|---|",
    ]
    for name, seconds, peak, note in phases.rows:
        lines.append(f"| {name} | {seconds:.1f} | {peak:,} | {note} |")
    lines += [
        "",
        "One process runs what the web request and the worker would (jobs inline with"
        " `job_execute`); peak RSS is the highest VmRSS sampled during the phase, the"
        " process's earlier memory included. The apply job writes the release (Parquet and"
        " the formula-guarded CSV), re-measures it, and computes the release measures (Step 8"
        " distributions, l-diversity, small cells) and the free-text scan from the written file.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, required=True, help="the CSV bench_scale.py wrote")
    parser.add_argument(
        "--database-url", default="postgres://postgres@127.0.0.1:5432/deidweb_webscale"
    )
    parser.add_argument("--var", type=Path, default=Path("/tmp/deidweb-web-scale"))
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "web_scale.md")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    before = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    subprocess.run(["rm", "-rf", str(args.var)], check=True)
    for folder in ("media", "broker/queue", "broker/processed"):
        (args.var / folder).mkdir(parents=True)
    args.var.chmod(0o700)
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "deidweb.settings.local",
            "DATABASE_URL": args.database_url,
            "DEIDWEB_VAR_DIR": str(args.var),
            "DEIDWEB_MASTER_KEY": b64encode(os.urandom(32)).decode(),
            "NUMBA_CACHE_DIR": str(ROOT / "var" / "numba"),
            "DEIDWEB_UPLOAD_MAX_BYTES": "100GB",
            "ALLOWED_HOSTS": "testserver",
            "LOG_LEVEL": "WARNING",
        }
    )
    name = args.database_url.rsplit("/", 1)[1]
    admin = args.database_url.rsplit("/", 1)[0] + "/postgres"
    for sql in (f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'):
        subprocess.run(["psql", admin, "-v", "ON_ERROR_STOP=1", "-qc", sql], check=True)
    manage = [sys.executable, "manage.py", "migrate", "--noinput", "-v0"]
    subprocess.run(manage, cwd=ROOT, check=True)
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    phases, extra = run(args.csv.resolve())
    rows = _rows_of(phases)
    report = markdown(
        rows, phases, extra, f"python bench/bench_web_scale.py --csv {args.csv}", before
    )
    print(report)
    if not args.no_write:
        args.out.write_text(report, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def _rows_of(phases: Phases) -> int:
    note = next(n for name, _, _, n in phases.rows if name.startswith("upload job"))
    return int(note.split(" rows")[0].replace(",", ""))


if __name__ == "__main__":
    sys.exit(main())
