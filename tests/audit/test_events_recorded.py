"""Every state change named in issue #12 has its event: sign-ins (failed too) and sign-outs,
changes through the administration site, the data set's intended release model, and raw
values of direct identifiers shown through the profile. And a GET changes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Membership, signing_passphrase_purpose
from apps.audit.models import AuditEvent
from apps.audit.services import audit_verify
from apps.core import crypto

pytestmark = pytest.mark.django_db


def actions(organization) -> list[str]:  # type: ignore[no-untyped-def]
    return list(
        AuditEvent.objects.filter(organization=organization)
        .order_by("sequence")
        .values_list("action", flat=True)
    )


def test_sign_in_failures_and_sign_out_are_recorded(custodian, analyst):
    client = Client()
    login = reverse("login")
    response = client.post(login, {"username": "analyst", "password": "wrong"})
    assert response.status_code == 200  # the form again
    client.post(login, {"username": "nobody-here", "password": "wrong"})
    assert client.post(login, {"username": "analyst", "password": "pw-analyst"}).status_code == 302
    client.post(reverse("logout"))

    events = list(AuditEvent.objects.filter(organization=custodian).order_by("sequence"))
    assert [e.action for e in events] == ["auth.login_failed", "auth.login", "auth.logout"]
    failed = events[0]
    assert failed.actor_name == "" and failed.details["username"] == "analyst"
    assert failed.details["ip"] == "127.0.0.1" and "wrong" not in str(failed.details)
    assert events[1].actor_name == "analyst" and events[2].actor_name == "analyst"
    (unknown,) = AuditEvent.objects.filter(organization__isnull=True, action="auth.login_failed")
    assert unknown.details["username"] == "nobody-here"
    assert audit_verify().ok


def test_api_basic_auth_failures_are_recorded(custodian, analyst, monkeypatch):
    import base64

    from rest_framework.views import APIView

    from apps.accounts.authentication import LockoutAwareBasicAuthentication

    # HTTP Basic is off unless DEIDWEB_API_BASIC_AUTH turns it on; views read it at import.
    monkeypatch.setattr(APIView, "authentication_classes", [LockoutAwareBasicAuthentication])

    token = base64.b64encode(b"analyst:wrong").decode()
    response = Client().get("/api/v1/assessments/", HTTP_AUTHORIZATION=f"Basic {token}")
    assert response.status_code in (401, 403)
    (event,) = AuditEvent.objects.filter(organization=custodian, action="auth.login_failed")
    assert event.details["path"] == "/api/v1/assessments/"


@pytest.fixture
def superuser(db):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_superuser("root", "root@example.org", "pw-root")


def test_admin_site_changes_are_recorded_and_never_show_a_secret(custodian, analyst, superuser):
    sealed = crypto.seal_text(
        "very-secret-passphrase", purpose=signing_passphrase_purpose(custodian.id)
    )
    custodian.signing_passphrase_sealed = sealed
    custodian.save()
    client = Client()
    client.force_login(superuser)
    url = reverse("admin:accounts_organization_change", args=[custodian.id])
    page = client.get(url).content.decode()
    assert "very-secret-passphrase" not in page and "signing_passphrase" not in page
    assert sealed not in page and sealed.split(".")[2] not in page
    membership = Membership.objects.get(user=analyst, organization=custodian)
    response = client.post(
        url,
        {
            "name": custodian.name,
            "slug": custodian.slug,
            "require_two_approvals": "on",
            "reassessment_months": "6",
            "upload_limit_bytes": "",
            "memberships-TOTAL_FORMS": "1",
            "memberships-INITIAL_FORMS": "1",
            "memberships-MIN_NUM_FORMS": "0",
            "memberships-MAX_NUM_FORMS": "1000",
            "memberships-0-id": str(membership.id),
            "memberships-0-organization": str(custodian.id),
            "memberships-0-user": str(analyst.id),
            "memberships-0-role": "reviewer",
        },
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    changes = {
        e.object_type: e.details["changes"]
        for e in AuditEvent.objects.filter(organization=custodian, action="admin.change")
    }
    assert changes["accounts.organization"]["require_two_approvals"] == {"from": False, "to": True}
    assert changes["accounts.organization"]["reassessment_months"] == {"from": 12, "to": 6}
    assert changes["accounts.membership"]["role"] == {"from": "analyst", "to": "reviewer"}
    custodian.refresh_from_db()
    assert custodian.signing_passphrase_sealed == sealed  # untouched, never shown


def test_a_data_set_cannot_be_moved_to_another_organization(ready_dataset, outsider, superuser):
    elsewhere = outsider.memberships.get().organization
    client = Client()
    client.force_login(superuser)
    url = reverse("admin:datasets_dataset_change", args=[ready_dataset.id])
    page = client.get(url).content.decode()
    assert 'name="organization"' not in page  # shown, not editable
    client.post(url, {"name": "renamed", "organization": str(elsewhere.id), "status": "ready"})
    ready_dataset.refresh_from_db()
    assert ready_dataset.organization_id != elsewhere.id


def test_roles_and_jobs_are_read_only_in_the_admin(ready_dataset, superuser):
    client = Client()
    client.force_login(superuser)
    variable = ready_dataset.variables.first()
    response = client.post(
        reverse("admin:classification_variable_change", args=[variable.id]), {"role": "other"}
    )
    assert response.status_code == 403
    variable.refresh_from_db()
    assert variable.role != "other"


def test_the_intended_release_model_change_is_recorded(client_for, analyst, classified, custodian):
    url = reverse("dataset-classify", kwargs={"org": custodian.slug, "dataset_id": classified.id})
    client_for(analyst).post(url, {"intended_release_model": "semi_public"})
    (event,) = AuditEvent.objects.filter(organization=custodian, action="dataset.release_model")
    assert event.details == {"from": "", "to": "semi_public"} and event.actor_name == "analyst"


def test_raw_values_of_direct_identifiers_shown_are_recorded(
    client_for, analyst, reviewer, classified, custodian, tmp_path
):
    from apps.datasets.profiling import profile_parquet
    from tests.assessments.conftest import PEOPLE

    PEOPLE.write_parquet(tmp_path / "people.parquet")
    classified.profile = profile_parquet(tmp_path / "people.parquet").to_dict()
    classified.save(update_fields=["profile"])
    detail = reverse("dataset-detail", kwargs={"org": custodian.slug, "dataset_id": classified.id})
    client_for(reviewer).get(detail)  # reviewers see no raw values: nothing to record
    assert not AuditEvent.objects.filter(action="dataset.identifier_values_read").exists()
    client_for(analyst).get(detail)
    client_for(analyst).get(f"/api/v1/datasets/{classified.id}/profile/")
    client_for(analyst).get("/api/v1/variables/", {"dataset": str(classified.id)})
    events = AuditEvent.objects.filter(action="dataset.identifier_values_read").order_by("sequence")
    assert [(e.details["via"], e.details["columns"]) for e in events] == [
        ("data set page", ["email"]),
        ("API profile", ["email"]),
        ("API variables", ["email"]),
    ]


def test_reading_step_7_saves_nothing(client_for, analyst, reviewer, assessment):
    from apps.assessments import services
    from apps.assessments.models import HierarchySpec
    from tests.assessments.conftest import LOW_ANSWERS

    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    before = AuditEvent.objects.count()
    url = reverse(
        "assessment-step",
        kwargs={
            "org": assessment.organization.slug,
            "assessment_id": assessment.id,
            "slug": "deidentify",
        },
    )
    client = Client()
    client.force_login(analyst)
    after_login = AuditEvent.objects.count()
    page = client.get(url)
    assert page.status_code == 200 and "age" in page.content.decode()
    assert not HierarchySpec.objects.filter(assessment=assessment).exists()
    assert AuditEvent.objects.count() == after_login and after_login == before + 1
    response = client.get(f"/api/v1/assessments/{assessment.id}/hierarchies/")
    assert [h["column"] for h in response.json()] == ["age", "sex"]
    assert not HierarchySpec.objects.filter(assessment=assessment).exists()
