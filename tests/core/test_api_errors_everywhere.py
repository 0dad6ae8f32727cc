"""Issue 23, item 16: the API answers its errors in JSON under every settings module, and a
path under /static/ never answers 500. Under local settings (DEBUG on) the 404s of the API were
Django's HTML debug pages (45 of them in the schemathesis run), which bypass ``handler404``;
and ``/static/%2e%2e`` answered 500 from runserver's static handler.

Every GET path of the served schema is tried with an unknown id and with a path below it that
does not exist, with DEBUG on and off (the contract test itself runs with the test settings)."""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def _schema_paths() -> list[str]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(schema["paths"])


def _unknown(path: str) -> str:
    return re.sub(
        r"{\w+}", lambda m: "age" if m.group(0) == "{column}" else str(uuid.uuid4()), path
    )


@pytest.mark.parametrize("debug", [True, False], ids=["local (DEBUG on)", "production (DEBUG off)"])
def test_every_api_error_is_json(client_for, analyst, settings, debug):
    settings.DEBUG = debug
    client = client_for(analyst)
    tried = 0
    for path in _schema_paths():
        for url in (_unknown(path), _unknown(path) + "not-here/", _unknown(path).rstrip("/")):
            response = client.get(url)
            if response.status_code < 400:
                continue
            tried += 1
            assert response["Content-Type"] == "application/json", (url, response.status_code)
            body = response.json()
            assert set(body) == {"message", "extra"} and body["message"], (url, body)
    assert tried > 60
    for url in ("/api/v1/nothing/", "/api/nothing", f"/api/v1/datasets/{uuid.uuid4()}/not-here/"):
        response = client.get(url)
        assert response.status_code == 404
        assert response.json() == {"message": "Not found.", "extra": {}}


def test_a_bad_host_under_the_api_is_a_json_400(client, settings):
    settings.DEBUG = True
    response = client.get("/api/v1/datasets/", HTTP_HOST="evil.example.org")
    assert response.status_code == 400
    assert response.json()["message"] == "Bad request."


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_local_runserver_answers_404_not_500_for_dot_dot_under_static(tmp_path):
    """The development server as ``make run`` starts it, asked over HTTP with the raw path
    (a client library would normalize ``%2e%2e`` away)."""
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "deidweb.settings.local",
        "DEIDWEB_VAR_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DATABASE_URL", None)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"runserver did not start: {server.stderr.read()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.3)
        answers = {}
        for path in (
            "/static/%2e%2e",
            "/static/%2e%2e/",
            "/static/..%2f..%2fmanage.py",
            "/static/css/app.css",
            "/api/v1/nothing/",
        ):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", path, headers={"Host": "localhost"})
            response = connection.getresponse()
            answers[path] = (response.status, response.getheader("Content-Type", ""))
            response.read()
            connection.close()
    finally:
        server.terminate()
        server.wait(10)
    assert answers["/static/css/app.css"][0] == 200
    for path in ("/static/%2e%2e", "/static/%2e%2e/", "/static/..%2f..%2fmanage.py"):
        assert answers[path][0] == 404, answers
    assert answers["/api/v1/nothing/"] == (404, "application/json"), answers
