"""Issue #15: the main pages run under the production Content-Security-Policy (the test
settings enforce it) without a single violation: no inline script, no eval, htmx polling
and the API documentation included."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from tests.conftest import wait_for_job

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.django_db(transaction=True)]

CSV = (
    "record_number,full_name,date_of_birth,sex,postal_code,diagnosis\n"
    "R-0001,Ann Lee,1984-02-11,F,K1A 0B1,J45 Asthma\n"
    "R-0002,Bo Chen,1973-07-30,M,M5V 2T6,E11 Type 2 diabetes\n"
    "R-0003,Cy Roy,1984-05-02,F,K1A 0B1,J45 Asthma\n"
)
# Collected before any page script runs; Playwright's init scripts are not subject to CSP.
WATCH = """
document.addEventListener("securitypolicyviolation", (e) =>
  window.reportViolation(`${e.violatedDirective} blocked ${e.blockedURI} on ${location.pathname}`));
"""
# Redoc's footer always asks Redocly's CDN for a logo: the policy blocks that request — no
# page of deidweb reaches a CDN — and Redoc hides the broken image. The one expected block.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def test_main_pages_run_under_the_policy_without_violations(
    celery_worker_process, live_server, page, admin_user, custodian
):
    from apps.datasets.services import dataset_upload

    dataset = dataset_upload(
        organization=custodian,
        user=admin_user,
        upload=SimpleUploadedFile("clinic.csv", CSV.encode()),
        name="Clinic extract",
    )
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    page.on("pageerror", lambda error: console.append(f"page error: {error}"))
    violations: list[str] = []
    page.expose_function("reportViolation", lambda text: violations.append(text))
    page.add_init_script(WATCH)
    base = live_server.url

    response = page.goto(f"{base}/accounts/login/")
    assert response is not None
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'self'" in csp
    assert "unsafe-eval" not in csp and "script-src 'self' 'unsafe-inline'" not in csp
    page.get_by_label("User name").fill("orgadmin")
    page.get_by_label("Password").fill("pw-orgadmin")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(custodian.name)

    # The data set's page polls its profiling job with htmx and reloads itself when done.
    org = f"{base}/o/{custodian.slug}"
    page.goto(f"{org}/datasets/{dataset.id}/")
    assert wait_for_job(dataset.profile_job_id, timeout=120).status == "succeeded"
    expect(page.get_by_text("full_name").first).to_be_visible(timeout=30_000)

    visited = []
    for path in (
        f"{org}/",
        f"{org}/datasets/",
        f"{org}/datasets/upload/",
        f"{org}/datasets/{dataset.id}/classify/",
        f"{org}/assessments/",
        f"{org}/reviews/",
        f"{org}/releases/",
        f"{org}/audit/",
        f"{org}/reports/verify/",
        f"{base}/accounts/",
        f"{base}/accounts/password/",
        f"{base}/help/",
        f"{base}/api/docs/",
        f"{base}/api/redoc/",
    ):
        response = page.goto(path)
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("networkidle")
        visited.append(path)
    expect(page.locator("redoc .api-content, .api-content").first).to_be_attached(timeout=30_000)
    page.goto(f"{base}/api/docs/")
    expect(page.locator(".swagger-ui .info").first).to_be_visible(timeout=30_000)

    violations = [v for v in violations if REDOC_LOGO not in v]
    blocked = [m for m in console if re.search(r"Content Security Policy|Refused to", m)]
    blocked = [m for m in blocked if REDOC_LOGO not in m]
    assert violations == [] and blocked == [], (violations, blocked)
    assert len(visited) == 14
