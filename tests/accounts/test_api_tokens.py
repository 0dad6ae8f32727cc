"""Issue #15: the API takes a per-user revocable key or the browser's session; HTTP Basic is
off unless turned on; an unauthenticated call is 401 with WWW-Authenticate; wrong keys and
heavy use are throttled."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.throttling import SimpleRateThrottle

from apps.accounts.models import ApiToken
from apps.audit.models import AuditEvent
from apps.audit.services import audit_verify

pytestmark = pytest.mark.django_db
URL = "/api/v1/datasets/"


def bearer(key: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {key}"}


def new_key(client: Client, name: str = "nightly export") -> str:
    response = client.post(reverse("account"), {"name": name})
    assert response.status_code == 201
    return str(response.context["new_key"])


@pytest.fixture
def rates(monkeypatch):  # type: ignore[no-untyped-def]
    """Throttle rates for one test (the suite's settings lift them), on a clean cache."""
    cache.clear()

    def set_rates(**scoped: str) -> None:
        monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", scoped)

    yield set_rates
    cache.clear()


def test_a_call_without_credentials_is_401_with_www_authenticate(custodian, analyst):
    response = Client().get(URL)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert response.json()["message"] == "Authentication credentials were not provided."


def test_http_basic_is_off_by_default(custodian, analyst):
    right = "Basic " + base64.b64encode(b"analyst:pw-analyst").decode()
    response = Client().get(URL, HTTP_AUTHORIZATION=right)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


def test_the_setting_turns_http_basic_on():
    code = "from django.conf import settings; print(settings.REST_FRAMEWORK['DEFAULT_AUTHENTICATION_CLASSES'])"
    env = {"DJANGO_SETTINGS_MODULE": "deidweb.settings.base", "PATH": "/usr/bin:/bin"}
    root = Path(__file__).resolve().parents[2]

    def classes(**extra: str) -> str:
        result = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {code}"],
            env={**env, **extra},
            cwd=root,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    assert "BasicAuthentication" not in classes()
    assert "LockoutAwareBasicAuthentication" in classes(DEIDWEB_API_BASIC_AUTH="yes")


def test_a_key_made_on_the_account_page_works_until_revoked(client_for, custodian, analyst):
    browser = client_for(analyst)
    key = new_key(browser)
    assert key.startswith("deid_") and len(key) >= 45
    token = ApiToken.objects.get(user=analyst)
    assert token.prefix == key[:11] and token.digest != key and key not in token.digest
    assert browser.get(reverse("account")).content.decode().count(key) == 0  # shown once

    script = Client()
    response = script.get(URL, **bearer(key))
    assert response.status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None
    assert script.get(URL, HTTP_AUTHORIZATION=f"Token {key}").status_code == 200

    response = browser.post(reverse("account-token-revoke", kwargs={"token_id": token.id}))
    assert response.status_code == 302
    refused = script.get(URL, **bearer(key))
    assert refused.status_code == 401
    assert refused.json()["message"] == "This API key is unknown or revoked."

    actions = list(
        AuditEvent.objects.filter(organization=custodian, action__startswith="auth.token")
        .order_by("sequence")
        .values_list("action", flat=True)
    )
    assert actions == ["auth.token_create", "auth.token_revoke"]
    assert audit_verify().ok


def test_a_key_acts_only_as_its_user(client_for, custodian, analyst, outsider):
    key = new_key(client_for(analyst))
    token = ApiToken.objects.get(user=analyst)
    response = client_for(outsider).post(
        reverse("account-token-revoke", kwargs={"token_id": token.id})
    )
    assert response.status_code == 404
    assert Client().get(URL, **bearer(key)).status_code == 200
    organizations = Client().get("/api/v1/organizations/", **bearer(key)).json()
    slugs = [o["slug"] for o in organizations.get("results", organizations)]
    assert slugs == [custodian.slug]


def test_a_key_of_a_deactivated_user_is_refused(client_for, custodian, analyst):
    key = new_key(client_for(analyst))
    analyst.is_active = False
    analyst.save()
    assert Client().get(URL, **bearer(key)).status_code == 401


def test_a_key_needs_a_name(client_for, analyst):
    response = client_for(analyst).post(reverse("account"), {"name": "  "})
    assert response.status_code == 400
    assert "Name the key" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_the_command_creates_lists_and_revokes_keys(custodian, analyst):
    out = io.StringIO()
    call_command("api_token", "create", "analyst", "--name", "ci", stdout=out, stderr=io.StringIO())
    key = out.getvalue().strip()
    assert Client().get(URL, **bearer(key)).status_code == 200

    listing = io.StringIO()
    call_command("api_token", "list", "analyst", stdout=listing)
    assert f"{key[:11]}…  ci  last used" in listing.getvalue() and "active" in listing.getvalue()

    call_command("api_token", "revoke", "analyst", key[:11], stdout=io.StringIO())
    assert Client().get(URL, **bearer(key)).status_code == 401


def test_wrong_keys_are_throttled_per_address(rates, client_for, custodian, analyst):
    rates(anon="1000/minute", user="1000/minute", auth="20/hour")
    key = new_key(client_for(analyst))
    attacker = Client()
    statuses = [attacker.get(URL, **bearer(f"deid_guess{i}")).status_code for i in range(30)]
    assert statuses == [401] * 20 + [429] * 10
    # A valid key is never refused for others' failures at the address (issue 23).
    assert attacker.get(URL, **bearer(key)).status_code == 200
    assert Client(REMOTE_ADDR="10.9.8.7").get(URL, **bearer(key)).status_code == 200
    # Aggregated: the first failure, the 10th, and the first refusal (not 30 rows).
    failed = AuditEvent.objects.filter(organization__isnull=True).order_by("sequence")
    assert [e.action for e in failed] == [
        "auth.login_failed",
        "auth.login_failed_repeated",
        "auth.throttled",
    ]
    assert {e.details["method"] for e in failed} == {"token"}


def test_a_user_is_throttled_past_the_user_rate(rates, client_for, custodian, analyst):
    rates(anon="1000/minute", user="5/minute", auth="20/hour")
    key = new_key(client_for(analyst))
    statuses = [Client().get(URL, **bearer(key)).status_code for _ in range(7)]
    assert statuses == [200] * 5 + [429] * 2
    response = Client().get(URL, **bearer(key))
    assert 0 < int(response["Retry-After"]) <= 60
