"""How API clients prove who they are.

- An API key (``Authorization: Bearer deid_…``), made and revoked by its user on the account
  page or with ``manage.py api_token``. It comes first, so an unauthenticated request is
  answered 401 with ``WWW-Authenticate: Bearer``.
- The browser's session (the pages' own calls), with Django's CSRF check.
- HTTP Basic only where ``DEIDWEB_API_BASIC_AUTH`` turns it on. It goes through Django's
  ``authenticate()``, so django-axes counts its failures with the sign-in form's and locks
  the same user name and address out; a locked-out client is told so (429, ``Retry-After``).

Wrong keys and wrong Basic passwords also count against the client's address in the "auth"
throttle scope (``DEIDWEB_API_RATE_AUTH``): past it, every attempt is refused unchecked.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.lockout import lockout_message


class LockedOut(exceptions.Throttled):
    default_code = "locked_out"


class FailedAuthenticationThrottle(SimpleRateThrottle):
    """Failed API authentications per client address: only failures count."""

    scope = "auth"
    num_requests: int | None  # set from the rate by SimpleRateThrottle.__init__
    duration: int | None

    def get_cache_key(self, request: Any, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def _load(self, request: Request) -> None:
        self.key = self.get_cache_key(request, None)
        self.now = self.timer()
        self.history = [
            t for t in self.cache.get(self.key, []) if t > self.now - (self.duration or 0)
        ]

    def refuse_if_exceeded(self, request: Request) -> None:
        if self.rate is None:
            return
        self._load(request)
        if len(self.history) >= (self.num_requests or 0):
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


def _failed(request: Request, user: Any, method: str, **details: Any) -> None:
    from apps.audit.signals import record_for_user, where_from

    FailedAuthenticationThrottle().record_failure(request)
    record_for_user(
        "auth.login_failed",
        user,
        None,
        {"method": method, **details, **where_from(request)},
    )


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keywords = ("bearer", "token")

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].decode("latin-1").lower() not in self.keywords:
            return None
        FailedAuthenticationThrottle().refuse_if_exceeded(request)
        if len(parts) != 2:
            _failed(request, None, "token", reason="malformed header")
            raise exceptions.AuthenticationFailed("Send the key as 'Authorization: Bearer <key>'.")
        from apps.accounts.models import ApiToken
        from apps.accounts.selectors import api_token_for_key

        key = parts[1].decode("latin-1")
        token = api_token_for_key(key=key)
        if token is None:
            _failed(request, None, "token", prefix=key[:11])
            raise exceptions.AuthenticationFailed("This API key is unknown or revoked.")
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
