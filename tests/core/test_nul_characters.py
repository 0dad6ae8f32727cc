"""A NUL character in a query parameter or a form field is a 400 naming it, on every path
(schemathesis found ``GET /api/v1/audit/verify/?organization=%00`` answered 500)."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_api_and_pages_refuse_nul_characters(client_for, analyst, admin_user, custodian):
    client = client_for(analyst)
    api = client.get("/api/v1/audit/verify/", {"organization": "ab\x00c"})
    assert api.status_code == 400
    assert api.json() == {
        "message": "'organization' contains a NUL character, which no field accepts.",
        "extra": {"field": "organization"},
    }
    listed = client.get("/api/v1/datasets/", {"organization": custodian.slug, "q": "\x00"})
    assert listed.status_code == 400 and listed.json()["extra"]["field"] == "q"
    from urllib.parse import urlencode

    page = client.post(
        reverse("login"),
        urlencode({"username": "a\x00", "password": "x"}),
        content_type="application/x-www-form-urlencoded",  # as a browser posts the form
    )
    assert page.status_code == 400
    assert b"'username' contains a NUL character" in page.content
    # Without one, the same call answers normally.
    verified = client_for(admin_user).get("/api/v1/audit/verify/", {"organization": custodian.slug})
    assert verified.status_code == 200


@pytest.mark.parametrize("cookie", ["sessionid", "csrftoken", "messages"])
def test_a_cookie_spelling_a_nul_is_not_a_server_error(client_for, analyst, custodian, cookie):
    """A quoted cookie value may spell any byte as an octal escape (``"\\000…"``), which
    Django's cookie parser decodes: a session key with a NUL reached the session table's
    lookup and answered 500 to anyone. Such a cookie is ignored, as a missing one is."""
    from django.test import Client

    anonymous = Client()
    anonymous.cookies.load(f'{cookie}="\\000abcdefghijklmnop"')
    page = anonymous.get(reverse("org-home", kwargs={"org": custodian.slug}))
    assert page.status_code == 302 and "/accounts/login/" in page["Location"]
    api = anonymous.get("/api/v1/datasets/")
    assert api.status_code in (401, 403) and "message" in api.json()
    # A signed-in user whose request also carries such a cookie is still signed in when it
    # is another one; a spoiled session cookie is as if signed out.
    client = client_for(analyst)
    client.cookies.load('junk="\\000x"')
    assert client.get("/api/v1/datasets/").status_code == 200
