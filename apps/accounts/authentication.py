"""How API clients prove who they are.

- An API key (``Authorization: Bearer deid_…``), made and revoked by its user on the account
  page or with ``manage.py api_token``. It comes first, so an unauthenticated request is
  answered 401 with ``WWW-Authenticate: Bearer``.
- The browser's session (the pages' own calls), with Django's CSRF check.
- HTTP Basic only where ``DEIDWEB_API_BASIC_AUTH`` turns it on. It goes through Django's
  ``authenticate()``, so django-axes counts its failures with the sign-in form's and locks
  the same user name and address out; a locked-out client is told so (429, ``Retry-After``).

Wrong keys and wrong Basic passwords count against the client's address — the one the trusted
proxies saw (``DEIDWEB_PROXY_COUNT``, ``apps.accounts.lockout.client_address``), never a header
the client writes, an IPv6 client counted by its /64 (``counted_address``) — and wrong keys also against their prefix, in the "auth" throttle scope
(``DEIDWEB_API_RATE_AUTH``): past it, a wrong key is refused unchecked (429). A valid key is
always accepted: one person's failures at a shared address do not lock out the others. The
audit trail gets the first failure from an address, then one aggregated event at 10, 100,
1,000… attempts and one when the throttle first refuses, instead of a row per attempt.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.events import record_for_user, where_from
from apps.accounts.lockout import counted_address, lockout_message
from apps.accounts.models import ApiToken
from apps.accounts.selectors import api_token_for_key

MAX_PREFIXES_RECORDED = 20


class LockedOut(exceptions.Throttled):
    default_code = "locked_out"


class FailedAuthenticationThrottle(SimpleRateThrottle):
    """Failed API authentications per client address, or per key prefix: only failures
    count, and only wrong credentials are refused by it."""

    scope = "auth"
    num_requests: int | None  # set from the rate by SimpleRateThrottle.__init__
    duration: int | None

    def __init__(self, *, kind: str = "address", value: str | None = None) -> None:
        super().__init__()
        self.kind, self.value = kind, value

    def get_ident(self, request: Any) -> str:
        return counted_address(request)

    def get_cache_key(self, request: Any, view: Any) -> str:
        ident = self.value if self.value is not None else self.get_ident(request)
        return self.cache_format % {"scope": f"{self.scope}-{self.kind}", "ident": ident}

    def _load(self, request: Request) -> None:
        self.key = self.get_cache_key(request, None)
        self.now = self.timer()
        self.history = [
            t for t in self.cache.get(self.key, []) if t > self.now - (self.duration or 0)
        ]

    def exceeded(self, request: Request) -> bool:
        if self.rate is None:
            return False
        self._load(request)
        return len(self.history) >= (self.num_requests or 0)

    def refuse_if_exceeded(self, request: Request) -> None:
        if self.exceeded(request):
            raise exceptions.Throttled(
                wait=self.wait(),
                detail="Too many failed attempts to authenticate from your address.",
            )

    def record_failure(self, request: Request) -> None:
        if self.rate is None:
            return
        self._load(request)
        self.history.insert(0, self.now)
        self.cache.set(self.key, self.history, self.duration)


def _throttles(request: Request, prefix: str) -> list[FailedAuthenticationThrottle]:
    throttles = [FailedAuthenticationThrottle()]
    if prefix:
        throttles.append(FailedAuthenticationThrottle(kind="prefix", value=prefix))
    return throttles


def _audit_attempt(request: Request, method: str, prefix: str, *, throttled: bool) -> None:
    """Aggregated: the first failed attempt from an address in the throttle's window, each
    10th, 100th, 1,000th…, and the first one the throttle refuses (with the count so far and
    the first prefixes tried) — a flood writes a handful of rows, not one per attempt."""
    window = FailedAuthenticationThrottle().duration or 3600
    address = counted_address(request)
    count_key = f"deidweb:auth-attempts:{address}"
    cache.add(count_key, 0, window)
    try:
        count = int(cache.incr(count_key))
    except ValueError:  # expired between add and incr
        cache.set(count_key, 1, window)
        count = 1
    state_key = f"deidweb:auth-attempts-state:{address}"
    state = cache.get(state_key) or {"since": timezone.now().isoformat(), "prefixes": []}
    if (
        prefix
        and prefix not in state["prefixes"]
        and len(state["prefixes"]) < MAX_PREFIXES_RECORDED
    ):
        state["prefixes"].append(prefix)
    cache.set(state_key, state, window)
    details = {"method": method, **where_from(request)}
    if throttled and cache.add(f"deidweb:auth-throttled:{address}", True, window):
        record_for_user(
            "auth.throttled",
            None,
            None,
            {**details, "failures": count, "since": state["since"], "prefixes": state["prefixes"]},
        )
    if count == 1:
        record_for_user("auth.login_failed", None, None, {**details, "prefix": prefix})
    elif count >= 10 and str(count).strip("0") == "1":  # 10, 100, 1000…
        record_for_user(
            "auth.login_failed_repeated",
            None,
            None,
            {**details, "failures": count, "since": state["since"], "prefixes": state["prefixes"]},
        )


def _refused(request: Request, method: str, prefix: str, message: str) -> Exception:
    """The error for a wrong credential: 429 unchecked past the throttle, else 401 (and the
    failure counted)."""
    throttles = _throttles(request, prefix)
    exceeded = [t for t in throttles if t.exceeded(request)]
    _audit_attempt(request, method, prefix, throttled=bool(exceeded))
    if exceeded:
        return exceptions.Throttled(
            wait=max(t.wait() or 0 for t in exceeded),
            detail="Too many failed attempts to authenticate from your address or with this "
            "key prefix.",
        )
    for throttle in throttles:
        throttle.record_failure(request)
    return exceptions.AuthenticationFailed(message)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].decode("latin-1").lower() not in self.keywords:
            return None
        if len(parts) != 2:
            raise _refused(request, "token", "", "Send the key as 'Authorization: Bearer <key>'.")
        key = parts[1].decode("latin-1")
        # The key is checked first: a valid key is never refused for others' failures, and
        # guessing one (256 random bits) is hopeless; the throttle bounds the noise.
        token = api_token_for_key(key=key)
        if token is None:
            raise _refused(request, "token", key[:11], "This API key is unknown or revoked.")
        now = timezone.now()
        if token.last_used_at is None or token.last_used_at < now - timedelta(minutes=1):
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)  # at most once a minute
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class LockoutAwareBasicAuthentication(authentication.BasicAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        if authentication.get_authorization_header(request)[:6].lower() == b"basic ":
            FailedAuthenticationThrottle().refuse_if_exceeded(request)
        return super().authenticate(request)

    def authenticate_credentials(
        self, userid: str, password: str, request: Any = None
    ) -> tuple[Any, None]:
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            if request is not None:
                FailedAuthenticationThrottle().record_failure(request)
            if request is not None and getattr(request, "axes_locked_out", False):
                raise LockedOut(
                    wait=settings.AXES_COOLOFF_TIME.total_seconds(),
                    detail=lockout_message(userid),
                ) from None
            raise
