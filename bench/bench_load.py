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
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from base64 import b64encode
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# (the repository's root is on sys.path first)
from bench.load.api import prepare_assessment, wait_http  # noqa: E402
from bench.load.database import job_counts, psql  # noqa: E402
from bench.load.jobs import Jobs  # noqa: E402
from bench.load.report import markdown  # noqa: E402
from bench.load.seed import seed  # noqa: E402
from bench.machine import load_average  # noqa: E402

BIN = Path(sys.executable).parent


def stop(process: subprocess.Popen[Any] | None) -> None:
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


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
