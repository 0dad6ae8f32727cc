"""Settings shared by every environment; the environment-specific modules extend these."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

from .env import env_bool, env_broker_url, env_database, env_int, env_list, env_size, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("DEIDWEB_VAR_DIR", str(BASE_DIR / "var")))

SECRET_KEY = env_str("SECRET_KEY", "insecure-local-development-key-change-me")
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
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media-not-served/"  # files are only ever streamed through permission-checked views
STORAGES = {
    "default": {
        "BACKEND": env_str(
            "DEIDWEB_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage"
        ),
        "OPTIONS": {"location": str(MEDIA_ROOT)},
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Uploads: files go to disk in chunks (never held whole in memory) and stop at the limit.
DEIDWEB_UPLOAD_MAX_BYTES = env_size("DEIDWEB_UPLOAD_MAX_BYTES", 2 * 1024**3)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024**2
FILE_UPLOAD_TEMP_DIR = None
FILE_UPLOAD_HANDLERS = ["apps.datasets.uploads.LimitedTemporaryFileUploadHandler"]
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024**2

# Celery: the broker only carries job ids; every result lives on the Job row.
CELERY_BROKER_URL = env_broker_url("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "deidweb")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# The server secret that seals the audit trail (HMAC-SHA-256 of every event and of each
# chain's head): without it, edited and re-chained events cannot be given valid seals.
# Defaults to a key derived from SECRET_KEY; set it on its own to rotate SECRET_KEY freely.
DEIDWEB_AUDIT_KEY = (
    env_str("DEIDWEB_AUDIT_KEY", "")
    or hmac.new(SECRET_KEY.encode(), b"deidweb audit chain", hashlib.sha256).hexdigest()
)

# A job whose progress has not moved for this long is reported as stalled.
DEIDWEB_JOB_STALE_SECONDS = env_int("DEIDWEB_JOB_STALE_SECONDS", 600, minimum=30)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON only: nested inputs (masking, answers, population) have no form encoding, and a
    # form would silently drop them. Uploads declare their multipart parsers themselves.
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "apps.core.pagination.StrictLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "apps.core.api.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "deidweb API",
    "DESCRIPTION": (
        "Risk-based de-identification of structured data (Ontario IPC guidelines): data sets, "
        "profiling, variable classification and jobs."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema maps every endpoint and rule: for signed-in users, like the API itself.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "apps.core.schema.document_errors",
    ],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "VariableRoleEnum": "apps.classification.models.VariableRole",
        "AssessmentStatusEnum": "apps.assessments.models.AssessmentStatus",
    },
}

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
