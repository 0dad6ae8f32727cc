"""Issue #15: production settings pass Django's deployment check and send strict headers;
the compose stack refuses to start without a SECRET_KEY."""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src 'self' blob:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)


def policy(header: str) -> dict[str, list[str]]:
    """A CSP header as directive -> sources (django-csp does not keep the order)."""
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: sources for name, *sources in directives}


def production(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "deidweb.settings.production",
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "deid.example.org",
            "DEIDWEB_VAR_DIR": str(tmp_path),
            # production refuses to start without a master key (docs/secrets-at-rest.md)
            "DEIDWEB_MASTER_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
            **env,
        },
    )


def test_check_deploy_reports_nothing(tmp_path):
    result = production(tmp_path, "manage.py", "check", "--deploy", "--fail-level", "DEBUG")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "System check identified no issues (0 silenced)."
    assert "WARNING" not in result.stderr and "?:" not in result.stderr


def test_production_refuses_a_short_secret_key(tmp_path):
    result = production(tmp_path, "manage.py", "check", SECRET_KEY="x" * 40)
    assert result.returncode != 0
    assert "SECRET_KEY must be set to a random value of at least 50 characters" in result.stderr


HEADERS = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
from django.test.utils import override_settings
# The manifest of collected static files is made at image build time (collectstatic).
plain_static = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
client = Client(HTTP_HOST="deid.example.org")
with override_settings(STORAGES=plain_static):
    page = client.get("/accounts/login/", secure=True)
    plain = client.get("/accounts/login/")
print(json.dumps({
    "status": page.status_code,
    "headers": dict(page.headers),
    "csrf_cookie_secure": bool(page.cookies["csrftoken"]["secure"]),
    "plain": [plain.status_code, plain.headers.get("Location")],
}))
"""


def test_production_pages_send_strict_headers(tmp_path):
    result = production(tmp_path, "-c", HEADERS)
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    assert answer["status"] == 200
    headers = answer["headers"]
    assert policy(headers["Content-Security-Policy"]) == policy(CSP)
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert answer["csrf_cookie_secure"] is True
    assert answer["plain"] == [301, "https://deid.example.org/accounts/login/"]


def test_hsts_is_configurable(tmp_path):
    script = "import django; django.setup(); from django.conf import settings; print(settings.SECURE_HSTS_SECONDS)"
    result = production(tmp_path, "-c", script, SECURE_HSTS_SECONDS="600")
    assert result.stdout.strip() == "600", result.stderr[-2000:]


def test_the_test_suite_enforces_the_production_policy(client):
    response = client.get("/accounts/login/")
    assert policy(response["Content-Security-Policy"]) == policy(CSP)


def test_compose_has_no_default_secret_key_and_secure_cookies():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    for name in ("web", "worker", "migrate"):
        env = compose["services"][name]["environment"]
        assert env["SECRET_KEY"].startswith("${SECRET_KEY:?"), name
        assert env["SESSION_COOKIE_SECURE"] == "${SESSION_COOKIE_SECURE:-true}"
        assert env["CSRF_COOKIE_SECURE"] == "${CSRF_COOKIE_SECURE:-true}"
        assert env["DEIDWEB_CACHE_URL"].startswith("redis://redis:6379/")


def test_no_template_has_inline_script_or_event_handlers():
    import re

    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text):
            if "src=" not in tag:
                offenders.append(f"{path.relative_to(ROOT)}: {tag}")
        if re.search(r"<[^>]+\son[a-z]+\s*=", text) or "javascript:" in text:
            offenders.append(f"{path.relative_to(ROOT)}: event handler or javascript: URL")
    assert offenders == []


def test_the_image_collects_static_files_under_the_production_settings():
    # Production's static storage needs the manifest collectstatic writes under it; collected
    # under other settings, every page of the image would fail on its first {% static %}.
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "DJANGO_SETTINGS_MODULE=deidweb.settings.production" in dockerfile
    assert "collectstatic --noinput" in dockerfile
