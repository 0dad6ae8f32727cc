"""Locust users for `make bench-load` (bench/bench_load.py starts the servers and locust).

Each simulated user signs in with its own account (the sign-in form, so that the lockout,
which counts failures per user and address, never sees one account shared by 50 users),
then browses the organization's pages, polls job pages (the HTML page, its progress
fragment and the job API) and now and then uploads a small CSV through the upload form and
follows its job. The accounts and ids come from the JSON file named by DEIDWEB_LOAD_SEED.
Requests are named by kind ("page: …", "poll: …", "upload"), so that locust reports one
line per kind.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import threading
from pathlib import Path
from typing import Any

from locust import HttpUser, between, events, task

SEED: dict[str, Any] = json.loads(Path(os.environ["DEIDWEB_LOAD_SEED"]).read_text())
_accounts = itertools.cycle(SEED["users"])
_lock = threading.Lock()
_JOB = re.compile(r"/jobs/([0-9a-f-]{36})/")
# Every response time by kind, written at the end for the driver's own aggregates.
TIMES: dict[str, list[float]] = {}


@events.request.add_listener
def _timed(name: str, response_time: float, **_: Any) -> None:
    TIMES.setdefault(name, []).append(response_time)


@events.quitting.add_listener
def _write_times(**_: Any) -> None:
    target = os.environ.get("DEIDWEB_LOAD_TIMES")
    if target:
        with open(target, "w") as handle:
            json.dump(TIMES, handle)


SMALL_CSV = "age,sex,postal,diagnosis\n" + "".join(
    f"{20 + i % 60},{'FM'[i % 2]},K{i % 9}A,J{i % 90:02d}\n" for i in range(200)
)


class WebUser(HttpUser):
    wait_time = between(0.5, 2.0)

    def on_start(self) -> None:
        with _lock:
            self.account = next(_accounts)
        self.org = f"/o/{SEED['org']}"
        self.jobs: list[str] = list(SEED["jobs"])
        self.client.get("/accounts/login/", name="page: sign-in")
        token = self.client.cookies.get("csrftoken", "")
        response = self.client.post(
            "/accounts/login/",
            {
                "username": self.account["username"],
                "password": self.account["password"],
                "csrfmiddlewaretoken": token,
            },
            headers={"Referer": f"{self.host}/accounts/login/"},
            name="sign-in",
            allow_redirects=False,
        )
        if response.status_code != 302:
            response.failure(f"sign-in refused ({response.status_code})")

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
