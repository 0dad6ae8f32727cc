"""The jobs run under the load: one search per assessment, then the apply of each search
that succeeded, started and followed through the API."""

from __future__ import annotations

import time

from bench.load.api import call


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
