"""The embedded default of `make run`, started for a test: SQLite and the filesystem broker
in a folder of the test's own, the web server and the workers as `bin/run` starts them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Stack:
    url: str
    var: Path
    setup: dict[str, Any]
    process: subprocess.Popen[bytes]
    env: dict[str, str]

    def api(self, key: int = 0) -> requests.Session:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.setup['keys'][key]}"
        return session

    def query(self, sql: str, *args: Any) -> list[tuple[Any, ...]]:
        """Read the stack's database (a reader never blocks its writers: WAL)."""
        with contextlib.closing(sqlite3.connect(self.var / "deidweb.sqlite3", timeout=30)) as db:
            return db.execute(sql, args).fetchall()

    def manage(self, *args: str) -> str:
        return _run([sys.executable, "-m", *args], self.env)

    def log(self, name: str) -> str:
        return (self.var / "log" / name).read_text(errors="replace")


def _run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    if done.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(var: Path, handlers: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TEST_", "DEIDWEB_", "CELERY_", "DATABASE_", "PYTEST"))
    }
    env.update(
        DJANGO_SETTINGS_MODULE="tests.jobs.embedded_settings",
        DEIDWEB_VAR_DIR=str(var),
        NUMBA_CACHE_DIR=str(ROOT / "var" / "numba"),  # compiled once for the worktree
        PYTHONPATH=str(ROOT),
        DEIDWEB_TEST_JOB_HANDLERS=",".join(f"{k}={v}" for k, v in (handlers or {}).items()),
    )
    return env


@contextlib.contextmanager
def embedded_stack(
    var: Path, handlers: dict[str, str] | None = None, *, bin_run: bool = True
) -> Iterator[Stack]:
    """Migrate a new embedded database under `var`, set up the data of
    ``tests.jobs.embedded_setup`` and run `bin/run` (web server and its two workers), or
    nothing when not `bin_run` (the test starts workers with ``worker``)."""
    env = environment(var, handlers)
    _run([sys.executable, "manage.py", "migrate", "--noinput"], env)
    setup = json.loads(_run([sys.executable, "-m", "tests.jobs.embedded_setup", "setup"], env))
    if not bin_run:
        yield Stack("", var, setup, subprocess.Popen(["true"]), env)
        return
    port = _free_port()
    process = subprocess.Popen(
        ["bash", "bin/run"],
        cwd=ROOT,
        env={**env, "BIN": str(Path(sys.executable).parent), "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    stack = Stack(f"http://127.0.0.1:{port}", var, setup, process, env)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert process.poll() is None, "bin/run ended: see " + str(var / "log")
            if _ready(stack):
                break
            time.sleep(0.5)
        else:
            raise AssertionError("the embedded stack did not start within 90 s")
        yield stack
    finally:
        _stop(process)


def _ready(stack: Stack) -> bool:
    try:
        requests.get(stack.url + "/health/", timeout=2).raise_for_status()
        workers = stack.query("select name from jobs_worker")
    except (requests.RequestException, sqlite3.Error):
        return False
    return len(workers) == 2  # both of bin/run's workers beat


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)  # bin/run stops its web server and workers
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever is left of its group
    process.wait(timeout=10)


def wait_finished(stack: Stack, job_ids: list[str], timeout: float) -> dict[str, str]:
    """Every job's status once all have ended (or as they are at the timeout)."""
    deadline = time.monotonic() + timeout
    wanted = {j.replace("-", "") for j in job_ids}
    while True:
        rows = dict(stack.query("select id, status from jobs_job"))
        statuses = {k: v for k, v in rows.items() if k in wanted}
        done = all(v in ("succeeded", "failed", "cancelled") for v in statuses.values())
        if (done and len(statuses) == len(wanted)) or time.monotonic() > deadline:
            return statuses
        time.sleep(0.5)


@contextlib.contextmanager
def worker(stack: Stack, name: str) -> Iterator[subprocess.Popen[bytes]]:
    """A worker on the stack, started the plain way (every queue), leading its own process
    group; yielded once its heartbeat is recorded."""
    log = open(stack.var / "log" / f"{name}.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "deidweb",
            "worker",
            "-n",
            f"{name}@%h",
            "--concurrency=1",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=stack.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not stack.query("select 1 from jobs_worker where name like ?", f"{name}@%"):
            assert process.poll() is None and time.monotonic() < deadline, f"{name} did not start"
            time.sleep(0.2)
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        log.close()
