"""Production: secrets must come from the environment; HTTPS-only cookies."""

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F403
from .base import DEIDWEB_MASTER_KEY, SECRET_KEY
from .env import env_bool, env_int

if SECRET_KEY.startswith("insecure-") or len(SECRET_KEY) < 32:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 32 characters."
    )

if not DEIDWEB_MASTER_KEY:
    raise ImproperlyConfigured(
        "DEIDWEB_MASTER_KEY must be set: 32 random bytes in base64 that encrypt the keys, "
        "linking tables and signing passphrases kept at rest."
    )

DEBUG = False
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_CONTENT_TYPE_NOSNIFF = True
STORAGES = {  # noqa: F405
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
