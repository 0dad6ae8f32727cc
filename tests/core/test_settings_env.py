import pytest
from django.core.exceptions import ImproperlyConfigured

from deidweb.settings.env import (
    env_bool,
    env_broker_url,
    env_int,
    env_size,
    env_str,
    parse_database_url,
)


def test_database_url_postgres_is_parsed_into_django_settings():
    config = parse_database_url("postgres://alice:s%40cret@db.example:6543/deid?sslmode=require")
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["USER"], config["PASSWORD"]) == ("alice", "s@cret")
    assert (config["HOST"], config["PORT"], config["NAME"]) == ("db.example", "6543", "deid")
    assert config["OPTIONS"] == {"sslmode": "require"}


def test_database_url_sqlite_relative_and_absolute():
    assert parse_database_url("sqlite:///var/db.sqlite3")["NAME"] == "var/db.sqlite3"
    assert parse_database_url("sqlite:////tmp/x/db.sqlite3")["NAME"] == "/tmp/x/db.sqlite3"


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("mysql://u@h/db", "unsupported scheme 'mysql'"),
        ("postgres://u@h:5432/", "names no database"),
        ("postgres://u@h:notaport/db", "invalid port"),
    ],
)
def test_bad_database_url_fails_loudly(url, fragment):
    with pytest.raises(ImproperlyConfigured, match=fragment):
        parse_database_url(url)


def test_typed_helpers_fail_loudly_on_malformed_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "maybe")
    monkeypatch.setenv("X_INT", "ten")
    monkeypatch.setenv("X_SIZE", "lots")
    monkeypatch.setenv("X_BROKER", "kafka://broker")
    with pytest.raises(ImproperlyConfigured, match="X_BOOL='maybe' is not a boolean"):
        env_bool("X_BOOL")
    with pytest.raises(ImproperlyConfigured, match="X_INT='ten' is not an integer"):
        env_int("X_INT", 1)
    with pytest.raises(ImproperlyConfigured, match="X_SIZE='lots' is not a size"):
        env_size("X_SIZE", 1)
    with pytest.raises(ImproperlyConfigured, match="not a supported broker URL"):
        env_broker_url("X_BROKER", "redis://")


def test_typed_helpers_read_good_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "Yes")
    monkeypatch.setenv("X_INT", " 42 ")
    monkeypatch.setenv("X_SIZE", "2GB")
    monkeypatch.setenv("X_SIZE2", "500 MiB")
    assert env_bool("X_BOOL") is True
    assert env_int("X_INT", 1) == 42
    assert env_size("X_SIZE", 1) == 2 * 1024**3
    assert env_size("X_SIZE2", 1) == 500 * 1024**2
    assert env_str("X_MISSING", "fallback") == "fallback"
    with pytest.raises(ImproperlyConfigured, match="X_MISSING is required"):
        env_str("X_MISSING")


def test_int_minimum_is_enforced(monkeypatch):
    monkeypatch.setenv("X_INT", "5")
    with pytest.raises(ImproperlyConfigured, match="below the minimum of 30"):
        env_int("X_INT", 60, minimum=30)


def test_production_settings_refuse_the_default_secret_key(monkeypatch):
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import django; from django.conf import settings; settings.DEBUG"],
        env={"DJANGO_SETTINGS_MODULE": "deidweb.settings.production", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        cwd=str(__import__("pathlib").Path(__file__).parents[2]),
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr
