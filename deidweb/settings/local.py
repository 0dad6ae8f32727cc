"""Local development: embedded SQLite database, filesystem broker, debug on."""

from .base import *  # noqa: F403
from .base import DEIDWEB_CSP_DIRECTIVES
from .env import env_bool

DEBUG = env_bool("DEBUG", True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True

# The production policy, reported (browser console) rather than enforced: Django's debug
# pages use inline script.
CONTENT_SECURITY_POLICY = None
CONTENT_SECURITY_POLICY_REPORT_ONLY = {"DIRECTIVES": DEIDWEB_CSP_DIRECTIVES}
