"""Locust users for `make bench-load` (bench/bench_load.py starts the servers and locust).

Each simulated user signs in with its own account (the sign-in form, so that the lockout,
which counts failures per user and address, never sees one account shared by 50 users),
then browses the organization's pages, polls job pages (the HTML page, its progress
fragment and the job API) and now and then uploads a small CSV through the upload form and
follows its job. The accounts and ids come from the JSON file named by DEIDWEB_LOAD_SEED.
Requests are named by kind ("page: …", "poll: …", "upload"), so that locust reports one
line per kind.

The measured window opens when the last user has signed in (DEIDWEB_LOAD_USERS): the 50
sign-ins (a deliberately costly password hash each) are reported apart, as the ramp, and
the file named by DEIDWEB_LOAD_MARK is created then, so that the driver starts its jobs
inside the window. Every response time and failure is written, by phase and kind, to the
JSON file named by DEIDWEB_LOAD_TIMES when locust stops.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import threading
import time
from pathlib import Path
from typing import Any

from locust import HttpUser, between, events, task

SEED: dict[str, Any] = json.loads(Path(os.environ["DEIDWEB_LOAD_SEED"]).read_text())
_accounts = itertools.cycle(SEED["users"])
_lock = threading.Lock()
_JOB = re.compile(r"/jobs/([0-9a-f-]{36})/")
USERS = int(os.environ.get("DEIDWEB_LOAD_USERS", "0"))
# The pause between two tasks of a user, in seconds ("min,max").
WAIT = tuple(float(x) for x in os.environ.get("DEIDWEB_LOAD_WAIT", "0.5,2.0").split(","))
# Response times (ms) and failures by phase ("ramp" until every user has signed in, then
# "measured") and kind, written at the end for the driver's aggregates.
RECORD: dict[str, Any] = {
    "times": {"ramp": {}, "measured": {}},
    "failures": {"ramp": {}, "measured": {}},
    "window": [None, None],
}
_signed_in = 0


def _phase() -> str:
    return "measured" if RECORD["window"][0] is not None else "ramp"


@events.request.add_listener
def _timed(name: str, response_time: float, exception: Any = None, **_: Any) -> None:
    phase = _phase()
    RECORD["times"][phase].setdefault(name, []).append(response_time)
    if exception is not None:
        RECORD["failures"][phase].setdefault(name, []).append(repr(exception)[:200])


def _signed_in_one() -> None:
    global _signed_in
    with _lock:
        _signed_in += 1
        if _signed_in == USERS and RECORD["window"][0] is None:
            RECORD["window"][0] = time.time()
            mark = os.environ.get("DEIDWEB_LOAD_MARK")
            if mark:
                Path(mark).touch()


@events.quitting.add_listener
def _write_times(**_: Any) -> None:
    RECORD["window"][1] = time.time()
    target = os.environ.get("DEIDWEB_LOAD_TIMES")
    if target:
        with open(target, "w") as handle:
            json.dump(RECORD, handle)


SMALL_CSV = "age,sex,postal,diagnosis\n" + "".join(
    f"{20 + i % 60},{'FM'[i % 2]},K{i % 9}A,J{i % 90:02d}\n" for i in range(200)
)


class WebUser(HttpUser):
    wait_time = between(*WAIT)

    def on_start(self) -> None:
        with _lock:
            self.account = next(_accounts)
        self.org = f"/o/{SEED['org']}"
        self.jobs: list[str] = list(SEED["jobs"])
        self.client.get("/accounts/login/", name="page: sign-in")
        token = self.client.cookies.get("csrftoken", "")
        with self.client.post(
            "/accounts/login/",
            {
                "username": self.account["username"],
                "password": self.account["password"],
                "csrfmiddlewaretoken": token,
            },
            headers={"Referer": f"{self.host}/accounts/login/"},
            name="sign-in",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            if response.status_code == 302:
                response.success()
            else:
                response.failure(f"sign-in refused ({response.status_code})")
        _signed_in_one()

    def _page(self, path: str, name: str) -> None:
        self.client.get(path, name=f"page: {name}")

    @task(3)
    def home(self) -> None:
        self._page(f"{self.org}/", "organization home")

    @task(3)
    def datasets(self) -> None:
        self._page(f"{self.org}/datasets/", "data sets")

    @task(3)
    def dataset(self) -> None:
        self._page(f"{self.org}/datasets/{SEED['dataset']}/", "data set")

    @task(2)
    def assessments(self) -> None:
        self._page(f"{self.org}/assessments/", "assessments")

    @task(2)
    def assessment(self) -> None:
        self._page(f"{self.org}/assessments/{random.choice(SEED['assessments'])}/", "assessment")

    @task(4)
    def poll_job(self) -> None:
        job = random.choice(self.jobs)
        self.client.get(f"{self.org}/jobs/{job}/", name="poll: job page")
        self.client.get(f"{self.org}/jobs/{job}/progress/", name="poll: job progress")
        self.client.get(
            f"/api/v1/jobs/{job}/",
            headers={"Authorization": f"Bearer {self.account['token']}"},
            name="poll: job API",
        )

    @task(1)
    def upload(self) -> None:
        form = self.client.get(f"{self.org}/datasets/upload/", name="page: upload form")
        token = self.client.cookies.get("csrftoken", "")
        with self.client.post(
            f"{self.org}/datasets/upload/",
            data={"csrfmiddlewaretoken": token, "name": "load test upload"},
            files={"file": ("small.csv", SMALL_CSV.encode(), "text/csv")},
            headers={"Referer": form.url or ""},
            name="upload",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            if response.status_code != 302:
                response.failure(f"upload answered {response.status_code}")
                return
            response.success()
        target = response.headers.get("Location", "")
        page = self.client.get(target, name="page: data set (after upload)")
        found = _JOB.search(page.text or "")
        if found:
            self.jobs.append(found.group(1))
            self.jobs = self.jobs[-20:]
