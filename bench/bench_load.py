"""`make bench-load`: 50 users browsing, uploading and polling while jobs run, on gunicorn +
a Celery worker + PostgreSQL + Redis, over loopback HTTP.

    .venv/bin/python bench/bench_load.py                  # 50 users, 2 minutes
    .venv/bin/python bench/bench_load.py --users 10 --duration 30

Steps: (re)create the database `deidweb_load` (--database-url) and migrate it; seed it (an
organization, --users analysts each with a password the validators accept and an API key,
one data set of --rows rows read and profiled, its classification accepted, and --jobs
assessments ready for Step 7); start gunicorn (production settings, plain HTTP on
127.0.0.1: SECURE_SSL_REDIRECT and the secure cookies off, everything else as deployed) and
a Celery worker on Redis; start locust headless (bench/locustfile.py) for --duration; once
the users are on, start one search per assessment through the API (and the apply of each
search that succeeds), so that --jobs jobs run under the load; then stop everything and
write the per-kind figures to docs/bench/load.md. The run fails if any request failed or a
job did not succeed. Everything listens on 127.0.0.1 only and is stopped at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from base64 import b64encode
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOW_ANSWERS = {
    "sensitivity": "low",
    "detail": "low",
    "individuals": "few",
    "harm": "low",
    "permitted_without_consent": "yes",
    "freely_given": "yes",
    "consent_or_notice": "yes",
}
TARGET_P95_MS = 500


# --------------------------------------------------------------------------- seeding


def seed(out: Path, users: int, rows: int, assessments: int) -> None:
    """Runs inside Django (production settings): write the accounts and ids to `out`."""
    import django

    sys.path.insert(0, str(ROOT))
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.files import File

    from apps.accounts.models import Role
    from apps.accounts.services import (
        api_token_create,
        membership_set,
        organization_create,
        user_set_password,
    )
    from apps.assessments.services import assessment_create
    from apps.classification.services import variables_accept_suggestions
    from apps.datasets.demo import write_demo_csv
    from apps.datasets.services import dataset_upload
    from apps.jobs.claiming import job_execute

    organization = organization_create(name="Load test", slug="load")
    User = get_user_model()
    accounts = []
    for number in range(users):
        username = f"load-analyst-{number:02d}"
        user = User.objects.create(username=username, email=f"{username}@example.org")
        password = secrets.token_urlsafe(16)
        user_set_password(user=user, password=password)
        membership_set(organization=organization, user=user, role=Role.ANALYST)
        _, key = api_token_create(user=user, name="load test")
        accounts.append({"username": username, "password": password, "token": key})
    first = User.objects.get(username="load-analyst-00")
    with tempfile.TemporaryDirectory() as scratch:
        path = write_demo_csv(Path(scratch) / "register.csv", n=rows)
        with path.open("rb") as handle:
            dataset = dataset_upload(
                organization=organization,
                user=first,
                upload=File(handle, name=path.name),  # type: ignore[arg-type]
                name="Load test register",
            )
    job_execute(job_id=str(dataset.profile_job_id))
    dataset.refresh_from_db()
    assert dataset.status == "ready", dataset.status
    variables_accept_suggestions(dataset=dataset, user=first)
    ids = [
        str(
            assessment_create(
                organization=organization, dataset=dataset, user=first, title=f"Load {n}"
            ).id
        )
        for n in range(assessments)
    ]
    out.write_text(
        json.dumps(
            {
                "org": organization.slug,
                "users": accounts,
                "dataset": str(dataset.id),
                "assessments": ids,
                "jobs": [str(dataset.profile_job_id)],
            }
        )
    )


# --------------------------------------------------------------------------- HTTP helpers


def call(base: str, token: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
    except (urllib.error.URLError, OSError) as error:  # a timeout counts as a failed call
        return 0, {"error": str(error)}


def wait_http(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    raise RuntimeError(f"{url} did not answer within {seconds} s")


def prepare_assessment(base: str, token: str, aid: str) -> None:
    api = f"/api/v1/assessments/{aid}/"
    for path, body in (
        ("release/", {"release_model": "public"}),
        ("threshold/", {"answers": LOW_ANSWERS}),
        ("context/", {}),
    ):
        status, answer = call(base, token, "PUT", api + path, body)
        assert status == 200, (path, status, answer)
    status, answer = call(base, token, "GET", api + "hierarchies/")
    assert status == 200, (status, answer)


class Jobs:
    """Searches started at once, each followed by its apply when it succeeds."""

    def __init__(self, base: str, token: str, assessments: list[str]) -> None:
        self.base, self.token = base, token
        self.state = {aid: "prepare" for aid in assessments}
        self.started: dict[str, float] = {}
        self.durations: list[float] = []
        self.failures: list[str] = []
        self.count = 0

    def start(self, aid: str, step: str) -> None:
        status, job = call(self.base, self.token, "POST", f"/api/v1/assessments/{aid}/{step}/", {})
        if status != 202:
            self.failures.append(f"{step} of {aid}: {status} {job}")
            self.state[aid] = "failed"
            return
        self.state[aid] = f"{step}:{job['id']}"
        self.started[aid] = time.monotonic()
        self.count += 1

    def tick(self) -> bool:
        """Advance every assessment; True while some job is still running."""
        running = False
        for aid, state in self.state.items():
            if state == "prepare":
                self.start(aid, "search")
                running = True
                continue
            if ":" not in state:
                continue
            step, job_id = state.split(":")
            status, job = call(self.base, self.token, "GET", f"/api/v1/jobs/{job_id}/")
            if status != 200:
                self.failures.append(f"job {job_id}: {status}")
                self.state[aid] = "failed"
                continue
            if job["status"] in ("queued", "running"):
                running = True
                continue
            self.durations.append(time.monotonic() - self.started[aid])
            if job["status"] != "succeeded":
                self.failures.append(f"{step} {job_id}: {job['status']} {job.get('error')}")
                self.state[aid] = "failed"
            elif step == "search":
                _, search = call(self.base, self.token, "GET", f"/api/v1/assessments/{aid}/search/")
                levels = (search.get("result") or {}).get("levels")
                status, answer = call(
                    self.base,
                    self.token,
                    "POST",
                    f"/api/v1/assessments/{aid}/choose/",
                    {"levels": levels},
                )
                if status != 200:
                    self.failures.append(f"choose {aid}: {status} {answer}")
                    self.state[aid] = "failed"
                    continue
                self.start(aid, "apply")
                running = True
            else:
                self.state[aid] = "done"
        return running


# --------------------------------------------------------------------------- driver


def machine() -> str:
    model = "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    memory = 0.0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) / 1024**2
    return f"{model}, {os.cpu_count()} CPUs (`nproc`), {memory:.1f} GiB RAM"


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


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


def stop(process: subprocess.Popen[Any] | None) -> None:
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=int, default=120, help="seconds of measured load")
    parser.add_argument("--spawn-rate", type=float, default=10, help="users started per second")
    parser.add_argument("--wait-min", type=float, default=0.5, help="shortest pause, seconds")
    parser.add_argument("--wait-max", type=float, default=2.0, help="longest pause, seconds")
    parser.add_argument("--jobs", type=int, default=10, help="searches started under load")
    parser.add_argument("--rows", type=int, default=20_000, help="rows of the seeded data set")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--gunicorn-workers", type=int, default=4)
    parser.add_argument("--gunicorn-threads", type=int, default=4)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/deidweb_load")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "load.md")
    parser.add_argument("--no-write", action="store_true", help="print the report only")
    parser.add_argument("--seed-into", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seed_into:
        seed(args.seed_into, args.users, args.rows, args.jobs)
        return 0

    before = load_average()
    work = Path(tempfile.mkdtemp(prefix="deidweb-load-"))
    (work / "var").mkdir(mode=0o700)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deidweb.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEIDWEB_MASTER_KEY": b64encode(secrets.token_bytes(32)).decode(),
        "DATABASE_URL": args.database_url,
        "CELERY_BROKER_URL": args.redis_url,
        "DEIDWEB_CACHE_URL": args.redis_url,
        # Queues of this run only, so that no other worker on the same Redis takes its jobs.
        "CELERY_TASK_DEFAULT_QUEUE": f"deidweb-load-{os.getpid()}",
        "DEIDWEB_INTERACTIVE_QUEUE": f"deidweb-load-{os.getpid()}-interactive",
        "DEIDWEB_HEAVY_QUEUE": f"deidweb-load-{os.getpid()}-heavy",
        "DEIDWEB_VAR_DIR": str(work / "var"),
        "NUMBA_CACHE_DIR": str(ROOT / "var" / "numba"),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "SECURE_HSTS_SECONDS": "0",
        # One address, 50 users: the per-user API rate is the one that applies.
        "DEIDWEB_API_RATE_USER": "100000/minute",
        "LOG_LEVEL": "WARNING",
    }
    python = str(BIN / "python")
    name = args.database_url.rsplit("/", 1)[1]
    psql(args.database_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    psql(args.database_url, f'CREATE DATABASE "{name}"')
    manage = [python, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([*manage, "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    seed_file = work / "seed.json"
    print("seeding", flush=True)
    subprocess.run(
        [python, __file__, "--seed-into", str(seed_file), "--users", str(args.users),
         "--rows", str(args.rows), "--jobs", str(args.jobs)],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip
    seeded = json.loads(seed_file.read_text())
    base = f"http://127.0.0.1:{args.port}"
    web = worker = locust = None
    jobs = Jobs(base, seeded["users"][0]["token"], seeded["assessments"])
    try:
        web = subprocess.Popen(
            [str(BIN / "gunicorn"), "-c", str(ROOT / "deidweb" / "gunicorn.conf.py"),
             "deidweb.wsgi:application", "--bind", f"127.0.0.1:{args.port}",
             "--workers", str(args.gunicorn_workers), "--threads", str(args.gunicorn_threads)],
            cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        worker = subprocess.Popen(
            [str(BIN / "celery"), "-A", "deidweb", "worker", "--loglevel=WARNING",
             "--concurrency", str(args.worker_concurrency), "-Q",
             ",".join(env[q] for q in ("DEIDWEB_INTERACTIVE_QUEUE", "DEIDWEB_HEAVY_QUEUE",
                                       "CELERY_TASK_DEFAULT_QUEUE"))],
            cwd=ROOT, env=env, start_new_session=True,
        )  # fmt: skip
        wait_http(f"{base}/health/", 60)
        for aid in seeded["assessments"]:
            prepare_assessment(base, jobs.token, aid)
        # Warm-up, not measured: each gunicorn worker imports the engine on its first page
        # (several seconds), which a deployment pays once, not under load.
        subprocess.run(
            [str(BIN / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
             "--host", base, "--users", str(min(args.users, 16)), "--spawn-rate", "16",
             "--run-time", "20s", "--only-summary", "--loglevel", "ERROR"],
            cwd=ROOT, env={**env, "DEIDWEB_LOAD_SEED": str(seed_file)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120,
        )  # fmt: skip
        mark = work / "measuring"
        times = work / "times.json"
        locust = subprocess.Popen(
            [str(BIN / "locust"), "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
             "--host", base, "--users", str(args.users), "--spawn-rate", str(args.spawn_rate),
             "--run-time", f"{args.duration + 600}s", "--only-summary",
             "--stop-timeout", "10", "--loglevel", "WARNING"],
            cwd=ROOT, start_new_session=True, stdout=subprocess.DEVNULL,
            env={**env, "DEIDWEB_LOAD_SEED": str(seed_file), "DEIDWEB_LOAD_TIMES": str(times),
                 "DEIDWEB_LOAD_USERS": str(args.users), "DEIDWEB_LOAD_MARK": str(mark),
                 "DEIDWEB_LOAD_WAIT": f"{args.wait_min},{args.wait_max}"},
        )  # fmt: skip
        ramp_deadline = time.monotonic() + 300
        while not mark.exists():  # every user has signed in: the measured window opens
            if time.monotonic() > ramp_deadline or locust.poll() is not None:
                raise RuntimeError("the users did not all sign in within 300 s")
            time.sleep(0.2)
        deadline = time.monotonic() + args.duration
        while time.monotonic() < deadline:
            jobs.tick()
            time.sleep(1)
        after = load_average()
        locust.send_signal(signal.SIGTERM)  # locust writes times.json as it quits
        locust.wait(60)
        while jobs.tick() and time.monotonic() < deadline + 300:
            time.sleep(1)
        for aid, state in jobs.state.items():
            if state != "done" and state != "failed":
                jobs.failures.append(f"assessment {aid}: not finished ({state})")
        record = json.loads(times.read_text())
        settle = time.monotonic() + 300  # the last uploads' jobs finish after the window
        while True:
            counts = job_counts(args.database_url)
            pending = any(st in ("queued", "running") for by in counts.values() for st in by)
            if not pending or time.monotonic() > settle:
                break
            time.sleep(1)
    finally:
        for process in (locust, worker, web):
            stop(process)
    report = markdown(args, record, jobs, before, after, counts)
    print(report)
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report, encoding="utf-8")
        print(f"wrote {args.out}")
    failed = sum(len(v) for v in record["failures"]["measured"].values())
    unfinished = sum(n for by in counts.values() for s, n in by.items() if s != "succeeded")
    return 1 if failed or jobs.failures or unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
