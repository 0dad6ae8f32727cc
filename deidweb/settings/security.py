"""Secrets and the guards around them: the secret key, the audit trail's seal, the master
key of secrets at rest, client addresses behind a proxy, calls to a timestamp authority,
sign-in lockouts and sessions, response headers."""

import hashlib
import hmac
from datetime import timedelta

from csp.constants import NONE, SELF, UNSAFE_INLINE

from .env import env_bool, env_int, env_list, env_master_key, env_str

SECRET_KEY = env_str("SECRET_KEY", "insecure-local-development-key-change-me")

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

# Behind a reverse proxy every request comes from the proxy: name how many trusted proxies
# append to X-Forwarded-For, so lockouts, throttles and the audit see the client's address.
DEIDWEB_PROXY_COUNT = env_int("DEIDWEB_PROXY_COUNT", 0, minimum=0)

# An RFC 3161 timestamp authority for report signatures (an organization may set its own);
# empty: no timestamp token, no network call when signing.
DEIDWEB_TSA_URL = env_str("DEIDWEB_TSA_URL", "")
# The timestamp authority an administrator names is called by the server (apps.core.outbound):
# https only and public addresses only, unless the operator allows plain http or names the
# networks of an in-house authority (comma-separated CIDRs, e.g. 10.2.0.0/24). A call that
# takes longer than the timeout fails the signing with a message.
DEIDWEB_TSA_ALLOW_HTTP = env_bool("DEIDWEB_TSA_ALLOW_HTTP", False)
DEIDWEB_TSA_ALLOWED_NETWORKS = env_list("DEIDWEB_TSA_ALLOWED_NETWORKS", [])
DEIDWEB_TSA_TIMEOUT_SECONDS = env_int("DEIDWEB_TSA_TIMEOUT_SECONDS", 10, minimum=1)

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
