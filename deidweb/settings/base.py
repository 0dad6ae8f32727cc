"""Settings shared by every environment; the environment-specific modules extend these.

Split by concept: where files are (``paths``), the engine's (``engine``), stored files and
uploads (``storage``), the jobs' (``jobs``), secrets and guards (``security``), the API's
(``api``); this module holds Django's own and imports each of them.
"""

from .api import *  # noqa: F403
from .engine import *  # noqa: F403
from .env import env_bool, env_cache, env_database, env_list, env_str
from .jobs import *  # noqa: F403
from .paths import BASE_DIR as BASE_DIR  # `as`: exported (for mypy's Django plugin)
from .paths import VAR_DIR as VAR_DIR
from .security import *  # noqa: F403
from .storage import *  # noqa: F403

DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from static/, never a CDN
    "axes",  # before apps.audit: its lockout bookkeeping runs before the audit's receivers
    "csp",
    "apps.core",
    "apps.accounts",
    "apps.jobs",
    "apps.datasets",
    "apps.classification",
    "apps.assessments",
    "apps.reviews",
    "apps.audit",
    "apps.reports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "apps.core.middleware.ApiErrorsAsJson",  # outermost but one: sees every error response
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "apps.core.middleware.RejectNulCharacters",  # before the session looks its cookie up
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a lockout into the sign-in page's message
]

ROOT_URLCONF = "deidweb.urls"
WSGI_APPLICATION = "deidweb.wsgi.application"
ASGI_APPLICATION = "deidweb.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.accounts.context_processors.organizations",
            ],
        },
    }
]

DATABASES = {"default": env_database("DATABASE_URL", f"sqlite:///{VAR_DIR / 'deidweb.sqlite3'}")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Shared by every web process in a deployment (API throttles count there): Redis, or memory.
CACHES = {"default": env_cache("DEIDWEB_CACHE_URL", "locmem://")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-ca"
TIME_ZONE = env_str("TIME_ZONE", "America/Toronto")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "deidweb@localhost")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}

DEIDWEB_HELP_BASE = "/help/"
