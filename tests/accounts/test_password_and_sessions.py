"""Issue #15: users change their own password; every service that sets one applies the
site's validators; a session ends after DEIDWEB_SESSION_IDLE_HOURS without a request."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.services import user_create, user_set_password
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError

pytestmark = pytest.mark.django_db
STRONG = "correct horse battery staple 42"


def sign_in(username: str, password: str) -> Client:
    client = Client()
    response = client.post(reverse("login"), {"username": username, "password": password})
    assert response.status_code == 302, response.content.decode()[:500]
    return client


def change(client: Client, old: str, new: str, again: str | None = None):  # type: ignore[no-untyped-def]
    return client.post(
        reverse("password-change"),
        {"old_password": old, "new_password1": new, "new_password2": again or new},
    )


def test_the_account_page_links_to_the_password_change(custodian, analyst):
    client = sign_in("analyst", "pw-analyst")
    page = client.get(reverse("org-home", kwargs={"org": custodian.slug})).content.decode()
    assert f'href="{reverse("account")}"' in page  # the user name in the menu
    account = client.get(reverse("account")).content.decode()
    assert f'href="{reverse("password-change")}"' in account
    assert "signed out after 8 hours without activity" in account


def test_a_user_changes_their_password(custodian, analyst):
    client = sign_in("analyst", "pw-analyst")
    other_session = sign_in("analyst", "pw-analyst")
    assert client.get(reverse("password-change")).status_code == 200

    wrong_old = change(client, "not-my-password", STRONG).content.decode()
    assert "Your old password was entered incorrectly" in wrong_old
    common = change(client, "pw-analyst", "password").content.decode()
    assert "This password is too common." in common
    short = change(client, "pw-analyst", "x7!q").content.decode()
    assert "This password is too short. It must contain at least 8 characters." in short
    mismatch = change(client, "pw-analyst", STRONG, STRONG + "!").content.decode()
    assert "The two password fields didn’t match." in mismatch

    response = change(client, "pw-analyst", STRONG)
    assert response.status_code == 302 and response["Location"] == reverse("account")
    assert "Your password is changed." in client.get(reverse("account")).content.decode()
    # Signed in here still; the other session is signed out; only the new password works.
    assert client.get(reverse("account")).status_code == 200
    assert other_session.get(reverse("account")).status_code == 302
    assert (
        Client()
        .post(reverse("login"), {"username": "analyst", "password": "pw-analyst"})
        .status_code
        == 200
    )
    sign_in("analyst", STRONG)

    (event,) = AuditEvent.objects.filter(organization=custodian, action="auth.password_change")
    assert event.actor_name == "analyst" and STRONG not in str(event.details)


def test_the_services_apply_the_password_validators(custodian, analyst):
    with pytest.raises(ApplicationError, match="too common"):
        user_create(username="newcomer", password="password")
    with pytest.raises(ApplicationError, match="too similar to the username"):
        user_create(username="mariabrown", password="mariabrown1")
    with pytest.raises(ApplicationError, match="entirely numeric"):
        user_set_password(user=analyst, password="7305921846")
    analyst.refresh_from_db()
    assert analyst.check_password("pw-analyst")

    user = user_create(username="newcomer", password=STRONG)
    assert user.check_password(STRONG)
    user_set_password(user=analyst, password=STRONG)
    analyst.refresh_from_db()
    assert analyst.check_password(STRONG)


def test_a_session_lasts_eight_idle_hours_and_each_request_extends_it(custodian, analyst):
    client = sign_in("analyst", "pw-analyst")
    key = client.session.session_key
    assert client.session.get_expiry_age() == 8 * 3600

    session = Session.objects.get(session_key=key)
    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() + dt.timedelta(minutes=5)
    )
    assert client.get(reverse("account")).status_code == 200
    session = Session.objects.get(session_key=key)
    remaining = session.expire_date - timezone.now()
    assert dt.timedelta(hours=7, minutes=59) < remaining <= dt.timedelta(hours=8)

    Session.objects.filter(session_key=key).update(
        expire_date=timezone.now() - dt.timedelta(seconds=1)
    )
    response = client.get(reverse("account"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_idle_time_is_a_setting():
    code = "from django.conf import settings; print(settings.SESSION_COOKIE_AGE, settings.SESSION_SAVE_EVERY_REQUEST)"
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env={
            "DJANGO_SETTINGS_MODULE": "deidweb.settings.base",
            "DEIDWEB_SESSION_IDLE_HOURS": "2",
            "PATH": "/usr/bin:/bin",
        },
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
    )
    assert result.stdout.split() == ["7200", "True"], result.stderr[-2000:]
