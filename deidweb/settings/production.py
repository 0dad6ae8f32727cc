"""Production: secrets must come from the environment; HTTPS only, with strict headers.

``manage.py check --deploy`` reports nothing under these settings (a test runs it). Behind a
TLS-terminating proxy, the proxy must set ``X-Forwarded-Proto``."""

import base64

from django.core.exceptions import ImproperlyConfigured

from apps.core.secret_strength import secret_weakness

from .base import *  # noqa: F403
from .env import env_bool, env_int, env_str
from .security import DEIDWEB_AUDIT_KEY, DEIDWEB_MASTER_KEY, SECRET_KEY

# Django's own check (security.W009) asks for 50 characters, five of them different; a
# secret must also look random (env.secret_weakness): 50 identical characters, a sequence,
# a phrase or a published value would let anyone forge sessions and audit seals.
_NEW_SECRET_KEY = 'python -c "import secrets; print(secrets.token_urlsafe(50))"'
_NEW_MASTER_KEY = 'python -c "import base64, os; print(base64.b64encode(os.urandom(32)).decode())"'
if SECRET_KEY.startswith(("insecure-", "django-insecure-")) or len(SECRET_KEY) < 50:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 50 characters "
        f"(e.g. {_NEW_SECRET_KEY})."
    )
_weak = secret_weakness(SECRET_KEY)
if _weak:
    raise ImproperlyConfigured(
        f"SECRET_KEY is not random: {_weak}. Set a generated one (e.g. {_NEW_SECRET_KEY})."
    )
if env_str("DEIDWEB_AUDIT_KEY", ""):
    _weak = secret_weakness(DEIDWEB_AUDIT_KEY)
    if _weak or len(DEIDWEB_AUDIT_KEY) < 32:
        raise ImproperlyConfigured(
            f"DEIDWEB_AUDIT_KEY is not random: {_weak or 'it is shorter than 32 characters'}. "
            f"Set a generated one (e.g. {_NEW_SECRET_KEY}) or leave it unset."
        )

if not DEIDWEB_MASTER_KEY:
    raise ImproperlyConfigured(
        "DEIDWEB_MASTER_KEY must be set: 32 random bytes in base64 that encrypt the keys, "
        "linking tables and signing passphrases kept at rest."
    )
_weak = secret_weakness(base64.b64decode(DEIDWEB_MASTER_KEY))
if _weak:
    raise ImproperlyConfigured(
        f"DEIDWEB_MASTER_KEY is not random: {_weak}. Generate one with {_NEW_MASTER_KEY}; "
        "if data was already sealed with it, rotate to the new key (manage.py "
        "rotate_master_key, with the weak one as DEIDWEB_MASTER_KEY_PREVIOUS)."
    )

DEBUG = False
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
SESSION_COOKIE_HTTPONLY = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
SECURE_REDIRECT_EXEMPT = [r"^health/$"]  # the container's own health check speaks plain HTTP
# HSTS: browsers use HTTPS only for this long (default one year) once they have seen it.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
STORAGES = {  # noqa: F405
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
