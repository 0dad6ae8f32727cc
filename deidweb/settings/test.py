"""Test settings.

The suite runs against real PostgreSQL and Redis (and a real Celery worker, started by the
test fixtures) whenever they answer. Where they do not, the suite falls back to SQLite and
skips the service-bound tests — unless DEIDWEB_REQUIRE_SERVICES is set (CI sets it), in
which case an unreachable service fails the run instead of silently narrowing it.
"""

import socket
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

from .base import *  # noqa: F403
from .env import env_bool, env_str, parse_database_url
from .jobs import redis_transport_options


def _reachable(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection(
            (parts.hostname or "127.0.0.1", parts.port or default_port), 1
        ):
            return True
    except OSError:
        return False


TEST_DATABASE_URL = env_str("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/deidweb")
TEST_BROKER_URL = env_str("TEST_BROKER_URL", "redis://127.0.0.1:6379/15")
DEIDWEB_REQUIRE_SERVICES = env_bool("DEIDWEB_REQUIRE_SERVICES", False)
DEIDWEB_SERVICES = {
    "postgres": _reachable(TEST_DATABASE_URL, 5432),
    "redis": _reachable(TEST_BROKER_URL, 6379),
}

if DEIDWEB_SERVICES["postgres"]:
    DATABASES = {"default": parse_database_url(TEST_DATABASE_URL, name="TEST_DATABASE_URL")}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}

CELERY_BROKER_URL = TEST_BROKER_URL if DEIDWEB_SERVICES["redis"] else "memory://"
CELERY_BROKER_TRANSPORT = None  # the URL's own (base sets the embedded broker's)
CELERY_BROKER_TRANSPORT_OPTIONS = redis_transport_options() if DEIDWEB_SERVICES["redis"] else {}
# Handlers replaced in a worker started by a test: "kind=dotted.path,..." (tests/slow_jobs.py).
DEIDWEB_JOB_HANDLERS = dict(
    item.split("=", 1) for item in env_str("DEIDWEB_TEST_JOB_HANDLERS", "").split(",") if item
)
CELERY_TASK_ALWAYS_EAGER = False

SECRET_KEY = "test-secret-key-not-for-production-0123456789abcdef"
# A fixed master key (32 bytes, base64), so sealed test values are reproducible; the
# rotation tests set their own.
DEIDWEB_MASTER_KEY = "ZGVpZHdlYi10ZXN0LW1hc3Rlci1rZXktMzItYnl0ZXM="
DEIDWEB_MASTER_KEY_PREVIOUS = ""
DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", tempfile.mkdtemp(prefix="deidweb-test-media-")))
STORAGES = {
    **STORAGES,  # noqa: F405
    "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT)},
    },
}
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
LOGGING = {"version": 1, "disable_existing_loggers": False}
# The suite makes many API calls a minute from one address; the throttle tests set their own.
REST_FRAMEWORK = {
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": {
        "anon": "10000/minute",
        "user": "10000/minute",
        "auth": "10000/minute",
    },
}
