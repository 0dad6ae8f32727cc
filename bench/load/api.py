"""The API calls of the load test's driver: one JSON call, waiting for the server, and an
assessment's Steps 1, 3 and 5 answered so that its search can start."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

LOW_ANSWERS = {
    "sensitivity": "low",
    "detail": "low",
    "individuals": "few",
    "harm": "low",
    "permitted_without_consent": "yes",
    "freely_given": "yes",
    "consent_or_notice": "yes",
}


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
