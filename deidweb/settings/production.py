"""Production: secrets must come from the environment; HTTPS only, with strict headers.

``manage.py check --deploy`` reports nothing under these settings (a test runs it). Behind a
TLS-terminating proxy, the proxy must set ``X-Forwarded-Proto``."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import DEIDWEB_MASTER_KEY, SECRET_KEY
from .env import env_bool, env_int

# Django's own check (security.W009) asks for 50 characters, five of them different.
if SECRET_KEY.startswith(("insecure-", "django-insecure-")) or len(SECRET_KEY) < 50:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 50 characters "
        '(e.g. python -c "import secrets; print(secrets.token_urlsafe(50))").'
    )

if not DEIDWEB_MASTER_KEY:
    raise ImproperlyConfigured(
        "DEIDWEB_MASTER_KEY must be set: 32 random bytes in base64 that encrypt the keys, "
        "linking tables and signing passphrases kept at rest."
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
