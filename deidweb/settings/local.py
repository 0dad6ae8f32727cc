"""Local development: embedded SQLite database, filesystem broker, debug on."""

from .base import *  # noqa: F403
from .env import env_bool

DEBUG = env_bool("DEBUG", True)
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
