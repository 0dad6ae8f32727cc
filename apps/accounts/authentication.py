"""How API clients prove who they are.

HTTP Basic goes through Django's ``authenticate()``, so django-axes counts its failures with
the sign-in form's and locks the same user name and address out; a locked-out client is told
so with a 429 and ``Retry-After`` rather than a bare "invalid password".
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import authentication, exceptions

from apps.accounts.lockout import lockout_message


class LockedOut(exceptions.Throttled):
    default_code = "locked_out"


class LockoutAwareBasicAuthentication(authentication.BasicAuthentication):
    def authenticate_credentials(
        self, userid: str, password: str, request: Any = None
    ) -> tuple[Any, None]:
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            if request is not None and getattr(request, "axes_locked_out", False):
                raise LockedOut(
                    wait=settings.AXES_COOLOFF_TIME.total_seconds(),
                    detail=lockout_message(userid),
                ) from None
            raise
