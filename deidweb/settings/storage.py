"""Stored files: the storage backend (local disk or S3), uploads, temporary files and the
bounds checked before a file is read."""

from pathlib import Path

from .env import env_int, env_size, env_str
from .paths import VAR_DIR

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
DEIDWEB_MAX_COLUMNS = env_int("DEIDWEB_MAX_COLUMNS", 2000, minimum=1)
DEIDWEB_MAX_EXPANDED_BYTES = env_size("DEIDWEB_MAX_EXPANDED_BYTES", 1024**3)
DEIDWEB_MAX_SHEET_CELLS = env_int("DEIDWEB_MAX_SHEET_CELLS", 16 * 1024**2, minimum=1)
# Stored files hold personal data, keys and signing material: readable by the service
# account only, whatever the process umask (the storage backend applies these to every
# file it saves and every folder it creates).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
