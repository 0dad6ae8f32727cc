"""Issue #15: 30 wrong passwords then the right one — through the sign-in form and through
HTTP Basic on the API — must end in a refusal that says why, and in the audit trail."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from axes.models import AccessAttempt
from django.test import Client
from django.urls import reverse
from rest_framework.views import APIView

from apps.accounts.authentication import LockoutAwareBasicAuthentication
from apps.audit.models import AuditEvent
from apps.audit.services import audit_verify

pytestmark = pytest.mark.django_db


def sign_in(client: Client, username: str, password: str, **extra: str):  # type: ignore[no-untyped-def]
    return client.post(reverse("login"), {"username": username, "password": password}, **extra)


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def test_the_sign_in_page_announces_the_policy(client):
    page = client.get(reverse("login")).content.decode()
    assert "After 10 failed attempts" in page and "paused for 30 minutes" in page


def test_thirty_wrong_passwords_then_the_right_one_is_refused_on_the_form(custodian, analyst):
    client = Client()
    statuses = [sign_in(client, "analyst", f"wrong-{i}").status_code for i in range(30)]
    assert statuses[:9] == [200] * 9  # the form again, "did not match"
    assert statuses[9:] == [429] * 21  # the tenth failure locks the user name out

    response = sign_in(client, "analyst", "pw-analyst")
    assert response.status_code == 429
    page = response.content.decode()
    assert "Signing in as “analyst” is locked for 30 minutes after 10 failed attempts" in page
    assert "ask an administrator to unlock it" in page
    assert "_auth_user_id" not in client.session
    assert client.get(reverse("home")).status_code == 302  # still signed out

    lockouts = AuditEvent.objects.filter(organization=custodian, action="auth.lockout")
    (event,) = lockouts
    assert event.details["username"] == "analyst" and event.details["ip"] == "127.0.0.1"
    assert event.details["failures"] == 10 and event.details["cooloff_minutes"] == 30
    failed = AuditEvent.objects.filter(organization=custodian, action="auth.login_failed")
    assert failed.count() == 31  # every attempt, the refused right one too
    assert not AuditEvent.objects.filter(action="auth.login").exists()
    assert audit_verify().ok


def test_the_lockout_holds_one_user_name_from_one_address(custodian, analyst, reviewer):
    client = Client()
    for i in range(10):
        sign_in(client, "analyst", f"wrong-{i}")
    assert sign_in(Client(), "reviewer", "pw-reviewer").status_code == 302
    assert sign_in(Client(), "analyst", "pw-analyst", REMOTE_ADDR="10.1.2.3").status_code == 302
    assert sign_in(Client(), "analyst", "pw-analyst").status_code == 429


def test_the_lockout_ends_after_the_cooloff(custodian, analyst):
    for i in range(10):
        sign_in(Client(), "analyst", f"wrong-{i}")
    assert sign_in(Client(), "analyst", "pw-analyst").status_code == 429
    AccessAttempt.objects.update(attempt_time=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=31))
    assert sign_in(Client(), "analyst", "pw-analyst").status_code == 302
    assert not AccessAttempt.objects.exists()  # a success forgets the failures


def test_thirty_wrong_passwords_then_the_right_one_is_refused_on_the_api(
    custodian, analyst, monkeypatch
):
    # Views read their authentication classes when they are imported: set them as a
    # deployment with HTTP Basic would have them.
    monkeypatch.setattr(APIView, "authentication_classes", [LockoutAwareBasicAuthentication])
    client = Client()
    url = "/api/v1/datasets/"
    statuses = [
        client.get(url, HTTP_AUTHORIZATION=basic("analyst", f"wrong-{i}")).status_code
        for i in range(30)
    ]
    assert statuses[:9] == [401] * 9
    assert statuses[9:] == [429] * 21

    response = client.get(url, HTTP_AUTHORIZATION=basic("analyst", "pw-analyst"))
    assert response.status_code == 429
    assert int(response["Retry-After"]) == 30 * 60
    assert "Signing in as “analyst” is locked for 30 minutes" in response.json()["message"]

    (event,) = AuditEvent.objects.filter(organization=custodian, action="auth.lockout")
    assert event.details["path"] == url and event.details["username"] == "analyst"


def test_behind_a_proxy_the_lockout_counts_the_client_not_the_proxy(custodian, analyst, settings):
    settings.DEIDWEB_PROXY_COUNT = 1
    proxy = {"REMOTE_ADDR": "10.0.0.2"}
    # The attacker sends X-Forwarded-For itself; the proxy appends the address it saw.
    for i in range(10):
        spoofed = f"198.51.100.{i}, 203.0.113.9"
        sign_in(Client(), "analyst", f"wrong-{i}", HTTP_X_FORWARDED_FOR=spoofed, **proxy)
    attacker = sign_in(
        Client(), "analyst", "pw-analyst", HTTP_X_FORWARDED_FOR="203.0.113.9", **proxy
    )
    assert attacker.status_code == 429
    colleague = sign_in(
        Client(), "analyst", "pw-analyst", HTTP_X_FORWARDED_FOR="192.0.2.44", **proxy
    )
    assert colleague.status_code == 302  # same proxy, another client
    (event,) = AuditEvent.objects.filter(organization=custodian, action="auth.lockout")
    assert event.details["ip"] == "203.0.113.9"
