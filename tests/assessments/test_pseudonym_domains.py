"""Named pseudonymisation domains (issue 25; EDPB Guidelines 01/2025): releases in one
domain share the key of their keyed pseudonyms, releases without one never do."""

import base64
import hashlib
import hmac
from pathlib import Path

import polars as pl
import pytest
from django.conf import settings

from apps.assessments import deidentify, release_apply, services
from apps.assessments.domains import (
    assessment_set_pseudonym_domain,
    domain_key_purpose,
    pseudonym_domain_create,
    release_pseudonym_keys,
)
from apps.assessments.hierarchies import hierarchy_set
from apps.assessments.models import Assessment, PseudonymDomain
from apps.assessments.threat_model_live import current_threat_model
from apps.audit.models import AuditEvent
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.core.rotation import sealed_fields
from apps.engine.masking import MaskSpec, mask_direct_identifiers
from apps.jobs.claiming import job_execute
from apps.reviews.snapshot import snapshot_content
from tests.assessments.conftest import LOW_ANSWERS

EMAILS = [f"p{i}@example.org" for i in range(10)]


def _run(job):
    assert job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error


def _released_emails(custodian, analyst, dataset, domain=None) -> set[str]:
    """A new assessment of ``dataset`` taken to an applied release whose e-mail column is
    a keyed pseudonym (in ``domain`` when given); its released e-mail values."""
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    if domain is not None:
        assessment_set_pseudonym_domain(assessment=assessment, user=analyst, domain_id=domain.id)
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    hierarchy_set(assessment=assessment, column="age", kind="interval", params={"widths": [10, 20]})
    deidentify.deid_config_set(
        assessment=assessment,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    released = pl.read_parquet(Path(settings.MEDIA_ROOT) / assessment.output_parquet_path)
    assert released.height == 10
    return set(released["email"].to_list())


def _key_of(domain: PseudonymDomain) -> bytes:
    return base64.b64decode(
        crypto.open_text(domain.key_sealed, purpose=domain_key_purpose(domain.id))
    )


def _hmac32(key: bytes, value: str) -> str:
    return hmac.new(key, value.encode(), hashlib.sha256).hexdigest()[:32]


@pytest.fixture
def domain(custodian, admin_user):
    return pseudonym_domain_create(
        organization=custodian,
        user=admin_user,
        name="Cohort study 2026",
        description="The cohort study's data manager",
    )


def test_two_releases_in_one_domain_give_the_same_pseudonyms(
    custodian, analyst, classified, domain
):
    first = _released_emails(custodian, analyst, classified, domain)
    second = _released_emails(custodian, analyst, classified, domain)
    assert first == second
    # Each pseudonym is HMAC-SHA-256 of the address under the domain's one key (32 hex).
    key = _key_of(domain)
    assert first == {_hmac32(key, e) for e in EMAILS}
    assert _hmac32(key, "p0@example.org") in second


def test_two_releases_without_a_domain_do_not_link(custodian, analyst, classified, domain):
    first = _released_emails(custodian, analyst, classified)
    second = _released_emails(custodian, analyst, classified)
    assert len(first) == len(second) == 10
    assert not first & second
    # Nor do they link to the domain's releases.
    assert not first & {_hmac32(_key_of(domain), e) for e in EMAILS}


def test_release_keys_are_chosen_in_one_function(custodian, analyst, assessment, domain):
    own = release_pseudonym_keys(assessment, ["email", "chart"])
    assert len(own["email"]) == 32 and own["email"] != own["chart"]
    assert release_pseudonym_keys(assessment, ["email"])["email"] != own["email"]
    assessment_set_pseudonym_domain(assessment=assessment, user=analyst, domain_id=domain.id)
    shared = release_pseudonym_keys(assessment, ["email", "chart"])
    assert shared == {"email": _key_of(domain), "chart": _key_of(domain)}
    # The engine uses a key given with the column's masking.
    frame = pl.DataFrame({"email": ["a@x.org", None]})
    masked = mask_direct_identifiers(frame, {"email": MaskSpec("hmac", key=shared["email"])})
    assert masked.data["email"].to_list() == [_hmac32(shared["email"], "a@x.org"), None]
    assert masked.secrets.keys["email"] == shared["email"]


def test_another_organizations_domain_is_refused(
    custodian, analyst, assessment, org_factory, user_factory
):
    other = org_factory("Elsewhere")
    their_admin = user_factory("their-admin", other, "admin")
    theirs = pseudonym_domain_create(organization=other, user=their_admin, name="Theirs")
    with pytest.raises(ApplicationError, match="only use a domain its own organization") as exc:
        assessment_set_pseudonym_domain(assessment=assessment, user=analyst, domain_id=theirs.id)
    assert exc.value.status == 404
    assessment.refresh_from_db()
    assert assessment.pseudonym_domain_id is None
    # Even if the row were pointed at it by other means, no key is handed out.
    Assessment.objects.filter(id=assessment.id).update(pseudonym_domain=theirs)
    assessment.refresh_from_db()
    with pytest.raises(ApplicationError, match="only use a domain its own organization"):
        release_pseudonym_keys(assessment, ["email"])


def test_domain_creation_is_for_administrators_and_audited(custodian, analyst, admin_user):
    with pytest.raises(ApplicationError, match="Only an administrator") as exc:
        pseudonym_domain_create(organization=custodian, user=analyst, name="Programme A")
    assert exc.value.status == 403
    assert not PseudonymDomain.objects.exists()
    domain = pseudonym_domain_create(
        organization=custodian, user=admin_user, name=" Programme A ", description="Team A"
    )
    assert domain.name == "Programme A"
    event = AuditEvent.objects.get(action="pseudonym_domain.create")
    assert event.object_id == str(domain.id)
    assert event.details == {"name": "Programme A", "description": "Team A"}
    assert event.organization_id == custodian.id
    # The key is sealed, bound to the domain, and never in the trail.
    key = _key_of(domain)
    assert len(key) == 32 and base64.b64encode(key).decode() not in str(event.details)
    assert (PseudonymDomain, "key_sealed") in sealed_fields()
    with pytest.raises(ApplicationError, match="already has") as dup:
        pseudonym_domain_create(organization=custodian, user=admin_user, name="programme a")
    assert dup.value.status == 409


def test_choice_is_audited_recorded_in_the_threat_model_and_stales_the_release(
    custodian, analyst, assessment, domain
):
    assessment_set_pseudonym_domain(assessment=assessment, user=analyst, domain_id=domain.id)
    event = AuditEvent.objects.filter(action="assessment.release").latest("sequence")
    assert event.details["pseudonym_domain"] == {"id": str(domain.id), "name": domain.name}
    deidentify.deid_config_set(
        assessment=assessment,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    model = current_threat_model(assessment)
    assert model["pseudonymisation"]["domain"] == {
        "id": str(domain.id),
        "name": "Cohort study 2026",
        "description": "The cohort study's data manager",
    }
    # The domain answers Step 1's two questions unless they were answered.
    assert model["pseudonymisation"]["who_can_link"] == "The cohort study's data manager"
    assert "'Cohort study 2026'" in model["pseudonymisation"]["key_kept"]
    # The record a submission freezes (what the review decides on) names the domain.
    frozen = snapshot_content(assessment, check_files=False)
    assert frozen["threat_model"]["pseudonymisation"]["domain"]["name"] == "Cohort study 2026"
    # Back to the release's own keys.
    assessment_set_pseudonym_domain(assessment=assessment, user=analyst, domain_id=None)
    assessment.refresh_from_db()
    assert assessment.pseudonym_domain_id is None
    assert current_threat_model(assessment)["pseudonymisation"]["domain"] is None


def test_api_defines_lists_and_chooses_a_domain(
    client_for, custodian, analyst, admin_user, outsider, assessment, org_factory, user_factory
):
    url = "/api/v1/pseudonym-domains/"
    body = {"organization": custodian.slug, "name": "Registry linkage"}
    assert client_for(analyst).post(url, body, content_type="application/json").status_code == 403
    created = client_for(admin_user).post(url, body, content_type="application/json")
    assert created.status_code == 201, created.content
    domain_id = created.json()["id"]
    assert created.json()["name"] == "Registry linkage" and "key" not in str(created.json())
    listed = client_for(analyst).get(url).json()
    assert [d["name"] for d in listed["results"]] == ["Registry linkage"]
    assert client_for(outsider).get(url).json()["results"] == []

    choice = f"/api/v1/assessments/{assessment.id}/pseudonym-domain/"
    answer = client_for(analyst).put(
        choice, {"pseudonym_domain": domain_id}, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["pseudonym_domain_name"] == "Registry linkage"
    assert client_for(analyst).get(choice).json()["pseudonym_domain"] == domain_id
    assert client_for(outsider).get(choice).status_code == 404

    other = org_factory("Elsewhere")
    theirs = pseudonym_domain_create(
        organization=other, user=user_factory("their-admin", other, "admin"), name="Theirs"
    )
    refused = client_for(analyst).put(
        choice, {"pseudonym_domain": str(theirs.id)}, content_type="application/json"
    )
    assert refused.status_code == 404
    assert "own organization" in refused.json()["message"]


def test_pages_define_a_domain_choose_it_in_step1_and_the_report_names_it(
    client_for, custodian, analyst, admin_user, assessment
):
    from django.template.loader import render_to_string

    url = f"/o/{custodian.slug}/pseudonym-domains/"
    assert b"An administrator of the organization defines" in client_for(analyst).get(url).content
    refused = client_for(analyst).post(url, {"name": "Programme B"})
    assert refused.status_code == 403 and not PseudonymDomain.objects.exists()
    made = client_for(admin_user).post(url, {"name": "Programme B", "description": "Team B"})
    assert made.status_code == 302
    domain = PseudonymDomain.objects.get(name="Programme B")
    assert b"Programme B" in client_for(analyst).get(url).content

    step1 = f"/o/{custodian.slug}/assessments/{assessment.id}/steps/release/"
    page = client_for(analyst).get(step1).content.decode()
    assert f'value="{domain.id}"' in page and "Named domain: Programme B" in page
    saved = client_for(analyst).post(
        step1, {"release_model": "public", "pseudonym_domain": str(domain.id)}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    assessment.refresh_from_db()
    assert assessment.pseudonym_domain_id == domain.id
    deidentify.deid_config_set(
        assessment=assessment,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    shown = render_to_string(
        "reports/_threat_model.html", {"threat_model": current_threat_model(assessment)}
    )
    assert "Named domain “Programme B”: every release in it uses one key" in shown
    assert "Can link pseudonyms back: Team B." in shown
    # Without a domain the report says the keys are the release's own.
    assessment_set_pseudonym_domain(assessment=assessment, user=analyst, domain_id=None)
    own = render_to_string(
        "reports/_threat_model.html", {"threat_model": current_threat_model(assessment)}
    )
    assert "This release's own keys: its pseudonyms do not link to any other release." in own
