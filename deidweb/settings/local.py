"""Local development: embedded SQLite database, filesystem broker, debug on."""

from .base import *  # noqa: F403
from .env import env_bool, local_master_key
from .paths import VAR_DIR
from .security import DEIDWEB_CSP_DIRECTIVES, DEIDWEB_MASTER_KEY

DEBUG = env_bool("DEBUG", True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
# runserver serves static files through WhiteNoise too, not through Django's static handler,
# whose finder answers a path such as /static/%2e%2e with a 500 (SuspiciousFileOperation).
INSTALLED_APPS = ["whitenoise.runserver_nostatic", *INSTALLED_APPS]  # noqa: F405

# The production policy, reported (browser console) rather than enforced: Django's debug
# pages use inline script.
CONTENT_SECURITY_POLICY = None
CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": DEIDWEB_CSP_DIRECTIVES}

# Secrets at rest need a master key; a developer's machine keeps one beside its data.
DEIDWEB_MASTER_KEY = DEIDWEB_MASTER_KEY or local_master_key(VAR_DIR / "master.key")
