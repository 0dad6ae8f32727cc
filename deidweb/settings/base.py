"""Settings shared by every environment; the environment-specific modules extend these."""

from __future__ import annotations

import hashlib
import hmac
import os
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF, UNSAFE_INLINE
from kombu.entity import Exchange, Queue

from .env import (
    default_job_memory_limit,
    env_bool,
    env_broker_url,
    env_cache,
    env_database,
    env_int,
    env_list,
    env_master_key,
    env_rate,
    env_size,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("DEIDWEB_VAR_DIR", str(BASE_DIR / "var")))
# numba's on-disk cache of the engine's compiled kernels, filled by `manage.py deid warmup`
# at install: under var/, which stays writable where the sources are not (the Docker image
# runs as a user who does not own them, and numba refuses to compile a cached kernel it
# cannot cache). The root: when the engine is first imported, after the settings, it points
# numba at the folder of its sources' digest under it (apps/engine/numba_cache.py).
os.environ.setdefault("NUMBA_CACHE_DIR", str(VAR_DIR / "numba"))

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

MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "/media-not-served/"  # files are only ever streamed through permission-checked views
# Files (uploads, Parquet, releases, reports) live on the local disk under MEDIA_ROOT, or in
# S3-compatible object storage when DEIDWEB_S3_BUCKET is set (SeaweedFS in docker-compose,
# any S3 in production): then web and workers share no disk, and a worker reads a stored
# file through a temporary local copy (apps.datasets.storage.local_path).
DEIDWEB_S3_BUCKET = env_str("DEIDWEB_S3_BUCKET", "")
DEIDWEB_S3_ENDPOINT_URL = env_str("DEIDWEB_S3_ENDPOINT_URL", "")
DEIDWEB_S3_ACCESS_KEY = env_str("DEIDWEB_S3_ACCESS_KEY", "")
DEIDWEB_S3_SECRET_KEY = env_str("DEIDWEB_S3_SECRET_KEY", "")
DEIDWEB_S3_REGION = env_str("DEIDWEB_S3_REGION", "us-east-1")
DEIDWEB_S3_PREFIX = env_str("DEIDWEB_S3_PREFIX", "")
DEIDWEB_S3_ADDRESSING_STYLE = env_str("DEIDWEB_S3_ADDRESSING_STYLE", "path")


def s3_storage_options() -> dict[str, object]:
    """django-storages' S3 backend options: private objects, never overwritten (a name that
    is taken gets a suffix, as on disk), no public URLs (files are streamed by the views)."""
    return {
        "bucket_name": DEIDWEB_S3_BUCKET,
        "endpoint_url": DEIDWEB_S3_ENDPOINT_URL or None,
        "access_key": DEIDWEB_S3_ACCESS_KEY or None,
        "secret_key": DEIDWEB_S3_SECRET_KEY or None,
        "region_name": DEIDWEB_S3_REGION or None,
        "location": DEIDWEB_S3_PREFIX,
        "addressing_style": DEIDWEB_S3_ADDRESSING_STYLE or None,
        "signature_version": "s3v4",
        "default_acl": None,
        "file_overwrite": False,
        "querystring_auth": True,
    }


S3_STORAGE_BACKEND = "storages.backends.s3.S3Storage"
if DEIDWEB_S3_BUCKET:
    _default_storage: dict[str, object] = {
        "BACKEND": env_str("DEIDWEB_STORAGE_BACKEND", S3_STORAGE_BACKEND),
        "OPTIONS": s3_storage_options(),
    }
else:
    _default_storage = {
        "BACKEND": env_str(
            "DEIDWEB_STORAGE_BACKEND", "django.core.files.storage.FileSystemStorage"
        ),
        "OPTIONS": {"location": str(MEDIA_ROOT)},
    }
STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Uploads: files go to disk in chunks (never held whole in memory) and stop at the limit.
DEIDWEB_UPLOAD_MAX_BYTES = env_size("DEIDWEB_UPLOAD_MAX_BYTES", 2 * 1024**3)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024**2
# Temporary files with data (uploads being received, local copies of stored files,
# conversions) are kept only in a private folder (0700): at start-up each process removes
# what ended processes left there and takes a folder of its own as the default of Python's
# tempfile module, which FILE_UPLOAD_TEMP_DIR = None means for uploads
# (apps/datasets/scratch.py).
DEIDWEB_TEMP_DIR = Path(env_str("DEIDWEB_TEMP_DIR", str(VAR_DIR / "tmp")))
FILE_UPLOAD_TEMP_DIR = None
FILE_UPLOAD_HANDLERS = ["apps.datasets.uploads.LimitedTemporaryFileUploadHandler"]
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024**2
# Bounds checked before a file is read in full (apps/datasets/ingest, IngestLimits): the
# columns of any file; what an .xlsx workbook may expand to and the cells of the sheet read
# (its reader holds the sheet in memory: a 490 KB ZIP bomb expands to 168 MB, a 1.5 KB
# workbook with a cell at XFD10000 spans 164 million cells; 10 million short text cells
# took 1.1 GB, so the 16 Mi cells allowed, Excel's rows × 16 columns, about 1.8 GB); a sheet
# may have Excel's own 1,048,576 rows. Parquet, SAS, SPSS and Stata files may decode to 20
# times the upload limit (they are streamed).
# An RFC 3161 timestamp authority for report signatures (an organization may set its own);
# empty: no timestamp token, no network call when signing.
DEIDWEB_TSA_URL = env_str("DEIDWEB_TSA_URL", "")
DEIDWEB_MAX_COLUMNS = env_int("DEIDWEB_MAX_COLUMNS", 2000, minimum=1)
DEIDWEB_MAX_EXPANDED_BYTES = env_size("DEIDWEB_MAX_EXPANDED_BYTES", 1024**3)
DEIDWEB_MAX_SHEET_CELLS = env_int("DEIDWEB_MAX_SHEET_CELLS", 16 * 1024**2, minimum=1)
# Stored files hold personal data, keys and signing material: readable by the service
# account only, whatever the process umask (the storage backend applies these to every
# file it saves and every folder it creates).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

# Celery: the broker only carries job ids; every result lives on the Job row.
CELERY_BROKER_URL = env_broker_url("CELERY_BROKER_URL", "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
CELERY_BROKER_TRANSPORT: str | None = None  # the URL's own transport
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "store_processed": False,
        # Where fanout exchanges (revoke, ping) live; kombu's default is ./control.
        "control_folder": str(_broker_dir / "control"),
        # Look for new jobs every 0.2 s (kombu's default of 1 s is most of a short job's wait).
        "polling_interval": 0.2,
    }
    # kombu's filesystem transport, made safe for a web process and workers together: a
    # message is written under a temporary name and renamed into the queue, so a worker
    # never reads one half written, and a malformed one is set aside, not fatal.
    CELERY_BROKER_TRANSPORT = "apps.jobs.broker:FilesystemTransport"
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "deidweb")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A job running longer than this is stopped: first inside the task (the job fails with a
# message), a minute later by ending the worker child.
DEIDWEB_JOB_TIME_LIMIT = env_int("DEIDWEB_JOB_TIME_LIMIT", 6 * 3600, minimum=60)
CELERY_TASK_SOFT_TIME_LIMIT = DEIDWEB_JOB_TIME_LIMIT
# Memory the exact search's lattice may take in a worker (its class tables, at most 512 MiB,
# come on top): larger lattices get the heuristic search. The node limit follows from the
# measured bytes per node (apps.engine.lattice.NODE_BYTES_BASE): 2048 MiB hold 3.47 M nodes
# with 9 quasi-identifiers (the fixed limit was 2 M).
DEIDWEB_SEARCH_MEMORY_MB = env_int("DEIDWEB_SEARCH_MEMORY_MB", 2048, minimum=64)
CELERY_TASK_TIME_LIMIT = DEIDWEB_JOB_TIME_LIMIT + 60
# Tasks are acknowledged only when the job has ended, and given back to the broker when the
# worker process running them dies, so another worker runs the job again (job_execute
# decides: once, if the worker that claimed it is gone). Each worker process takes one job
# at a time and reserves no other. Redis gives an unacknowledged task to another worker
# after the visibility timeout: it must be longer than the longest job, or a job still
# running would be delivered again (job_execute would see its worker alive and skip it).
CELERY_TASK_REJECT_ON_WORKER_LOST = True
DEIDWEB_BROKER_VISIBILITY_TIMEOUT = env_int(
    "DEIDWEB_BROKER_VISIBILITY_TIMEOUT", CELERY_TASK_TIME_LIMIT + 3600, minimum=1
)
# How often a worker looks for tasks whose visibility timeout has passed (seconds).
DEIDWEB_BROKER_RESTORE_INTERVAL = env_int("DEIDWEB_BROKER_RESTORE_INTERVAL", 10, minimum=1)


def redis_transport_options() -> dict[str, object]:
    return {
        "visibility_timeout": DEIDWEB_BROKER_VISIBILITY_TIMEOUT,
        "unacked_restore_interval": DEIDWEB_BROKER_RESTORE_INTERVAL,
        "unacked_restore_throttle": 1,
    }


if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_BROKER_TRANSPORT_OPTIONS = redis_transport_options()
# A job whose worker was lost is run again until it has been started this many times.
DEIDWEB_JOB_MAX_ATTEMPTS = env_int("DEIDWEB_JOB_MAX_ATTEMPTS", 2, minimum=1)
# Queues by kind of job (apps.jobs.kinds.job_queue): risk and search are interactive,
# ingest, profile, apply and report heavy. They are declared, so a worker started without
# `-Q` (`celery -A deidweb worker`) consumes every one; a deployment can keep some workers
# for the interactive queue alone (`celery worker -Q interactive`).
DEIDWEB_JOB_QUEUES = {
    "interactive": env_str("DEIDWEB_INTERACTIVE_QUEUE", "interactive"),
    "heavy": env_str("DEIDWEB_HEAVY_QUEUE", "heavy"),
}
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)  # type: ignore[no-untyped-call]
    for name in dict.fromkeys([CELERY_TASK_DEFAULT_QUEUE, *DEIDWEB_JOB_QUEUES.values()])
]
# Each worker writes a heartbeat this often (seconds) and is taken for dead when none came
# for DEIDWEB_WORKER_LOST_SECONDS: a running job of a dead worker is run again at once
# (or fails, DEIDWEB_JOB_MAX_ATTEMPTS), by any live worker (apps.jobs.workers).
DEIDWEB_WORKER_HEARTBEAT_SECONDS = env_int("DEIDWEB_WORKER_HEARTBEAT_SECONDS", 2, minimum=1)
DEIDWEB_WORKER_LOST_SECONDS = env_int("DEIDWEB_WORKER_LOST_SECONDS", 10, minimum=3)
# A queued job that has waited this long says on its page whether a worker takes its queue.
DEIDWEB_JOB_WAIT_NOTICE_SECONDS = env_int("DEIDWEB_JOB_WAIT_NOTICE_SECONDS", 5, minimum=1)
# A queued job still waiting after this long while a worker of its queue sits idle has lost
# its message (taken by a worker that died or hung): a live worker sends it again.
DEIDWEB_JOB_REDISPATCH_SECONDS = env_int("DEIDWEB_JOB_REDISPATCH_SECONDS", 30, minimum=5)
# Jobs a member may have queued or running at once among the long ones (upload reading,
# profiling, apply): the next is refused with a message until one ends.
DEIDWEB_JOB_USER_HEAVY_LIMIT = env_int("DEIDWEB_JOB_USER_HEAVY_LIMIT", 3, minimum=1)
# A worker runs each job in a child process of its own (apps.jobs.isolation), whose memory
# it watches: past this ceiling the job fails with a message and the worker goes on.
# Default: half the memory of the machine, or of the container's memory limit.
DEIDWEB_JOB_ISOLATION = env_bool("DEIDWEB_JOB_ISOLATION", True)
DEIDWEB_JOB_MEMORY_LIMIT = env_size("DEIDWEB_JOB_MEMORY_LIMIT", default_job_memory_limit())
# kind → dotted path of a handler replacing the built-in one (the tests slow some down).
DEIDWEB_JOB_HANDLERS: dict[str, str] = {}
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# The server secret that seals the audit trail (HMAC-SHA-256 of every event and of each
# chain's head): without it, edited and re-chained events cannot be given valid seals.
# Defaults to a key derived from SECRET_KEY; set it on its own to rotate SECRET_KEY freely.
DEIDWEB_AUDIT_KEY = (
    env_str("DEIDWEB_AUDIT_KEY", "")
    or hmac.new(SECRET_KEY.encode(), b"deidweb audit chain", hashlib.sha256).hexdigest()
)

# The master key that wraps the data key of every secret kept at rest (pseudonymization
# keys, linking tables, signing passphrases; apps.core.crypto): 32 random bytes in base64.
# Production refuses to start without it; local settings keep one in var/master.key. To
# rotate, set the new key here and the old one in DEIDWEB_MASTER_KEY_PREVIOUS, then run
# `manage.py rotate_master_key`.
DEIDWEB_MASTER_KEY = env_master_key("DEIDWEB_MASTER_KEY")
DEIDWEB_MASTER_KEY_PREVIOUS = env_master_key("DEIDWEB_MASTER_KEY_PREVIOUS")

# A running job whose worker cannot be checked (run in-process on another machine, or
# claimed before workers recorded heartbeats) is taken as lost after this long without
# progress; others are known alive or dead by their worker (apps.jobs.liveness).
DEIDWEB_JOB_STALE_SECONDS = env_int("DEIDWEB_JOB_STALE_SECONDS", 600, minimum=30)

# Behind a reverse proxy every request comes from the proxy: name how many trusted proxies
# append to X-Forwarded-For, so lockouts, throttles and the audit see the client's address.
DEIDWEB_PROXY_COUNT = env_int("DEIDWEB_PROXY_COUNT", 0, minimum=0)

# The timestamp authority an administrator names is called by the server (apps.core.outbound):
# https only and public addresses only, unless the operator allows plain http or names the
# networks of an in-house authority (comma-separated CIDRs, e.g. 10.2.0.0/24). A call that
# takes longer than the timeout fails the signing with a message.
DEIDWEB_TSA_ALLOW_HTTP = env_bool("DEIDWEB_TSA_ALLOW_HTTP", False)
DEIDWEB_TSA_ALLOWED_NETWORKS = env_list("DEIDWEB_TSA_ALLOWED_NETWORKS", [])
DEIDWEB_TSA_TIMEOUT_SECONDS = env_int("DEIDWEB_TSA_TIMEOUT_SECONDS", 10, minimum=1)

# API authentication: a per-user key (Bearer) first — so a request without credentials gets
# 401 with WWW-Authenticate — then the browser's session; HTTP Basic only when turned on.
DEIDWEB_API_BASIC_AUTH = env_bool("DEIDWEB_API_BASIC_AUTH", False)
DEIDWEB_API_AUTHENTICATION = [
    "apps.accounts.authentication.ApiTokenAuthentication",
    "rest_framework.authentication.SessionAuthentication",
] + (
    ["apps.accounts.authentication.LockoutAwareBasicAuthentication"]
    if DEIDWEB_API_BASIC_AUTH
    else []
)
# Requests per client address (anonymous), per user, and failed authentications per address.
DEIDWEB_API_RATES = {
    "anon": env_rate("DEIDWEB_API_RATE_ANON", "60/minute"),
    "user": env_rate("DEIDWEB_API_RATE_USER", "600/minute"),
    "auth": env_rate("DEIDWEB_API_RATE_AUTH", "20/hour"),
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": DEIDWEB_API_AUTHENTICATION,
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": DEIDWEB_API_RATES,
    # 0 without a proxy: REST framework then takes REMOTE_ADDR, not a client-written
    # X-Forwarded-For (None would trust the header), as apps.accounts.lockout counts it.
    "NUM_PROXIES": DEIDWEB_PROXY_COUNT,
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
        # The questionnaires' answer sets (Steps 3 and 5), shared by several questions.
        "LowModerateHighEnum": ["low", "moderate", "high"],
        "FewManyVeryManyEnum": ["few", "many", "very many"],
        "YesUnclearNoEnum": ["yes", "unclear", "no"],
        "YesPartlyNoEnum": ["yes", "partly", "no"],
        "YesPartialNoEnum": ["yes", "partial", "no"],
        # Step 1: the release models, and those that name a recipient (issue 23).
        "ReleaseModelEnum": "apps.assessments.serializers_release.RELEASE_MODELS",
        "PublicReleaseModelEnum": "apps.assessments.serializers_release.PUBLIC_RELEASE_MODELS",
        "NamedReleaseModelEnum": "apps.assessments.serializers_release.NAMED_RELEASE_MODELS",
        "AgreementKindEnum": "apps.assessments.models.AgreementKind",
        # A hierarchy's kind keeps the name it had while it was the only "kind" enum.
        "KindEnum": "apps.assessments.models.HierarchySpec.Kind",
        # Why a release must be re-assessed (issue 28).
        "ReassessmentTriggerKindEnum": "apps.reviews.models.ReassessmentTrigger.Kind",
        # A member's role in the organization.
        "RoleEnum": "apps.accounts.models.Role",
        # Person- or event-level: a linked table's role, a quasi-identifier's level (issue 25).
        "PersonEventEnum": ["person", "event"],
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

# --- Sign-in, sessions and API authentication (issue #15) -------------------------------
# Lockout (django-axes): this many failed sign-ins for one user name from one address lock
# that pair out for the cool-off; every further failure during it starts the cool-off again.
# The sign-in form, the admin's and HTTP Basic on the API all go through it.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("DEIDWEB_LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("DEIDWEB_LOGIN_COOLOFF_MINUTES", 30, minimum=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "apps.accounts.lockout.lockout_response"
AXES_VERBOSE = False
AXES_CLIENT_IP_CALLABLE = "apps.accounts.lockout.counted_address"
# Sessions end after this long without a request; each request starts the wait again.
DEIDWEB_SESSION_IDLE_HOURS = env_int("DEIDWEB_SESSION_IDLE_HOURS", 8, minimum=1)
SESSION_COOKIE_AGE = DEIDWEB_SESSION_IDLE_HOURS * 3600
SESSION_SAVE_EVERY_REQUEST = True

# --- Response headers (issue #15) ---------------------------------------------------------
# The Content-Security-Policy, defined once: production and the test suite enforce it (the
# browser tests fail on any violation), local development reports violations only. Scripts
# come only from this site's own files — no inline script, no eval; htmx and the vendored
# assets are static files. Styles also allow 'unsafe-inline': the pages draw bars and charts
# with computed style attributes, htmx inserts its indicator style, and Swagger UI and Redoc
# style themselves inline; a style cannot run code, so the risk left is page defacement by
# injected markup, which escaping already prevents.
DEIDWEB_CSP_DIRECTIVES: dict[str, list[str]] = {
    "default-src": [SELF],
    "script-src": [SELF],
    "style-src": [SELF, UNSAFE_INLINE],
    "img-src": [SELF, "data:"],  # Pico's icons and the empty favicon are data: URLs
    "font-src": [SELF],
    "connect-src": [SELF],
    "worker-src": [SELF, "blob:"],  # Redoc's search runs in a worker built from a blob
    "object-src": [NONE],
    "base-uri": [SELF],
    "form-action": [SELF],
    "frame-ancestors": [NONE],
}
CONTENT_SECURITY_POLICY: dict[str, object] | None = {"DIRECTIVES": DEIDWEB_CSP_DIRECTIVES}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
