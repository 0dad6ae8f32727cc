"""Typed readers for the environment.

Settings come from the environment so one image serves every deployment; a value that is
present but malformed must stop the process at start-up rather than surface later as a
confusing runtime error, so every helper raises ImproperlyConfigured naming the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None:
        if default is None:
            raise ImproperlyConfigured(f"Environment variable {name} is required but not set.")
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        parsed = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None
    if minimum is not None and parsed < minimum:
        raise ImproperlyConfigured(f"{name}={parsed} is below the minimum of {minimum}.")
    return parsed


_SIZE_UNITS = {
    "": 1,
    "B": 1,
    "K": 1024,
    "KB": 1024,
    "M": 1024**2,
    "MB": 1024**2,
    "G": 1024**3,
    "GB": 1024**3,
    "T": 1024**4,
    "TB": 1024**4,
}


def env_size(name: str, default: int) -> int:
    """A byte size such as ``2GB``, ``500M`` or ``1048576``."""
    value = os.environ.get(name)
    if value is None:
        return default
    text = value.strip().upper().replace(" ", "").replace("IB", "B")
    number = text.rstrip("KMGTB")
    unit = text[len(number) :]
    try:
        amount = float(number)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a size (e.g. 2GB, 500MB).") from None
    if unit not in _SIZE_UNITS or amount <= 0:
        raise ImproperlyConfigured(f"{name}={value!r} is not a size (e.g. 2GB, 500MB).")
    return int(amount * _SIZE_UNITS[unit])


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


@dataclass(frozen=True)
class _Engine:
    engine: str
    default_port: int | None


_DB_SCHEMES = {
    "postgres": _Engine("django.db.backends.postgresql", 5432),
    "postgresql": _Engine("django.db.backends.postgresql", 5432),
    "pgsql": _Engine("django.db.backends.postgresql", 5432),
    "sqlite": _Engine("django.db.backends.sqlite3", None),
}


def parse_database_url(url: str, *, name: str = "DATABASE_URL") -> dict[str, object]:
    """``postgres://user:pass@host:5432/db?sslmode=require`` or ``sqlite:///path/to/file``."""
    parts = urlsplit(url)
    engine = _DB_SCHEMES.get(parts.scheme)
    if engine is None:
        known = ", ".join(sorted(_DB_SCHEMES))
        raise ImproperlyConfigured(f"{name} has unsupported scheme {parts.scheme!r} (use {known}).")
    if engine.engine.endswith("sqlite3"):
        path = unquote(parts.path)
        # sqlite:///relative/file.db -> "relative/file.db"; sqlite:////abs/file.db -> "/abs/..."
        path = path[1:] if path.startswith("/") else path
        if not path:
            raise ImproperlyConfigured(f"{name}={url!r} names no SQLite file.")
        return {"ENGINE": engine.engine, "NAME": path}
    db_name = unquote(parts.path.lstrip("/"))
    if not db_name:
        raise ImproperlyConfigured(f"{name}={url!r} names no database.")
    try:
        port = parts.port or engine.default_port
    except ValueError:
        raise ImproperlyConfigured(f"{name}={url!r} has an invalid port.") from None
    options = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    config: dict[str, object] = {
        "ENGINE": engine.engine,
        "NAME": db_name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(port) if port else "",
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
    if options:
        config["OPTIONS"] = options
    return config


def env_database(name: str, default: str) -> dict[str, object]:
    return parse_database_url(env_str(name, default), name=name)


def env_broker_url(name: str, default: str) -> str:
    url = env_str(name, default)
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in {"redis", "rediss", "filesystem", "memory", "amqp", "pyamqp"}:
        raise ImproperlyConfigured(
            f"{name}={url!r} is not a supported broker URL (redis://, filesystem://, memory://)."
        )
    return url


_RATE_PERIODS = {"s", "sec", "second", "m", "min", "minute", "h", "hour", "d", "day"}


def env_rate(name: str, default: str) -> str:
    """A request rate as Django REST framework reads it: ``60/minute``, ``20/hour``."""
    value = env_str(name, default).strip()
    count, _, period = value.partition("/")
    if not count.isdigit() or period not in _RATE_PERIODS:
        raise ImproperlyConfigured(f"{name}={value!r} is not a rate (e.g. 60/minute, 20/hour).")
    return value


def env_cache(name: str, default: str) -> dict[str, object]:
    """``redis://host:6379/1`` (shared by every process) or ``locmem://`` (this process)."""
    url = env_str(name, default)
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme in {"redis", "rediss"}:
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    raise ImproperlyConfigured(f"{name}={url!r} is not a cache URL (redis://… or locmem://).")


MASTER_KEY_BYTES = 32


def _master_key(text: str, *, source: str) -> str:
    import base64
    import binascii

    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != MASTER_KEY_BYTES:
        raise ImproperlyConfigured(
            f"{source} must be {MASTER_KEY_BYTES} random bytes in base64 (generate one with "
            '`python -c "import base64, os; print(base64.b64encode(os.urandom(32)).decode())"`).'
        )
    return text.strip()


def env_master_key(name: str) -> str:
    """A base64 AES-256 master key, or "" when the variable is unset or empty."""
    value = os.environ.get(name, "").strip()
    return _master_key(value, source=name) if value else ""


def local_master_key(path: os.PathLike[str] | str) -> str:
    """The development master key kept in ``path`` (0600), generated on first use.

    Only for a developer's machine: whoever can read this file can read every secret in the
    database and storage beside it. Production passes the key in the environment instead."""
    import base64
    from pathlib import Path

    file = Path(path)
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _master_key(file.read_text(), source=str(file))
    with os.fdopen(descriptor, "w") as handle:
        handle.write(base64.b64encode(os.urandom(MASTER_KEY_BYTES)).decode() + "\n")
    return _master_key(file.read_text(), source=str(file))
