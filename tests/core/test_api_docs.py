"""Interactive API documentation at /api/docs/ (Swagger UI) and /api/redoc/, served from
static files: nothing from a CDN."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_api_docs_load_nothing_from_the_internet(client_for, analyst):
    client = client_for(analyst)
    for path in ("/api/docs/", "/api/redoc/"):
        response = client.get(path)
        assert response.status_code == 200, path
        body = response.content.decode()
        sources = re.findall(r'(?:src|href)="([^"]+)"', body)
        assert sources, path
        assert all(not s.startswith(("http://", "https://", "//")) for s in sources), sources
        assert "<script>" not in body  # no inline script (the CSP forbids them)
    assert b"/api/schema/" in client.get("/api/redoc/").content
    assert b"swagger-ui-bundle.js" in client.get("/api/docs/").content
    # Swagger UI's start-up script is a file of its own, pointing at the schema.
    script = client.get("/api/docs/", {"script": ""})
    assert script.status_code == 200 and b"/api/schema/" in script.content
