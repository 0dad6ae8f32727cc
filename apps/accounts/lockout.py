"""What a locked-out sign-in sees (django-axes calls ``lockout_response``).

The sign-in page again, saying plainly that the user name is locked from this address, for
how long, and who can lift it — never a bare "403". The API gets the same words as JSON.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.formats import time_format


def client_address(request: Any) -> str:
    """The address a request came from, as lockouts, throttles and the audit trail count it.

    ``REMOTE_ADDR``; behind ``DEIDWEB_PROXY_COUNT`` trusted proxies, the address the outermost
    of them saw, counted from the right of ``X-Forwarded-For`` (as Django REST framework's
    ``NUM_PROXIES`` does) so that a client cannot choose it by sending the header itself."""
    remote = str(request.META.get("REMOTE_ADDR", ""))
    count = int(getattr(settings, "DEIDWEB_PROXY_COUNT", 0))
    if count:
        forwarded = str(request.META.get("HTTP_X_FORWARDED_FOR", ""))
        addresses = [a.strip() for a in forwarded.split(",") if a.strip()]
        if addresses:
            return addresses[-min(count, len(addresses))]
    return remote


# One IPv6 client owns a whole /64 (SLAAC and privacy addresses change the last 64 bits at
# will), so failures are counted per /64, as an IPv4 client is counted per address.
IPV6_CLIENT_PREFIX = 64


def counted_address(request: Any) -> str:
    """The client as failures are counted against it (throttles, the sign-in lockout):
    ``client_address``, with an IPv4 address in IPv6 form (``::ffff:a.b.c.d``, a dual-stack
    socket's) written as IPv4 and an IPv6 address replaced by the first of its /64 — a client
    that changes its interface bits on every request is still one client. The audit trail
    keeps the full address (``client_address``)."""
    address = client_address(request)
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        network = ipaddress.IPv6Network(f"{parsed}/{IPV6_CLIENT_PREFIX}", strict=False)
        return str(network.network_address)
    return str(parsed)


def cooloff_minutes() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)


def sign_in_policy() -> dict[str, int]:
    """What the sign-in page announces before anyone is locked out."""
    return {
        "login_failure_limit": int(settings.AXES_FAILURE_LIMIT),
        "login_cooloff_minutes": cooloff_minutes(),
    }


def lockout_message(username: str = "") -> str:
    """One sentence for the page and the API: what happened, until when, who can help."""
    until = timezone.localtime(timezone.now() + settings.AXES_COOLOFF_TIME)
    who = f"“{username}”" if username else "this user name"
    return (
        f"Signing in as {who} is locked for {cooloff_minutes()} minutes after "
        f"{settings.AXES_FAILURE_LIMIT} failed attempts from your network address. Try again "
        f"after {time_format(until, 'H:i')} (each further attempt starts the wait again), or ask "
        "an administrator to unlock it."
    )


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict[str, Any]
) -> HttpResponse:
    username = str((credentials or {}).get("username") or request.POST.get("username", ""))[:150]
    message = lockout_message(username)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"message": message, "extra": {}}, status=429)
        response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
        return response
    form = AuthenticationForm(request, initial={"username": username})
    return render(
        request,
        "registration/login.html",
        {
            "form": form,
            "lockout_message": message,
            "next": request.POST.get("next", ""),
            **sign_in_policy(),
        },
        status=429,
    )
