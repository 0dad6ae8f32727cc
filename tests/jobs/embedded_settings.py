"""The embedded default of `make run` (SQLite and the filesystem broker under
DEIDWEB_VAR_DIR), for the tests that start it: local settings, with job handlers replaced
as the tests ask (``DEIDWEB_TEST_JOB_HANDLERS``, "kind=dotted.path,...")."""

from deidweb.settings.env import env_str
from deidweb.settings.local import *  # noqa: F403

DEIDWEB_JOB_HANDLERS = dict(
    item.split("=", 1) for item in env_str("DEIDWEB_TEST_JOB_HANDLERS", "").split(",") if item
)
