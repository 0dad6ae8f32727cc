"""Step 3 offers only the threshold profiles whose source sets a value for the release model
(issue 28): the EMA / Health Canada 0.09 is for the public release of clinical reports, so a
non-public or semi-public release cannot use it — through the service, the page or the API.
The chosen profile's name, values and source are kept in Step 3's result."""

import json

import pytest
from django.urls import reverse

from apps.assessments import services
from apps.audit.models import AuditEvent
from apps.core.errors import ApplicationError
from tests.assessments.conftest import HIGH_ANSWERS, LOW_ANSWERS

DSA = {
    "release_model": "non_public",
    "recipient_organization": "University X",
    "agreement_kind": "dsa",
    "agreement_reference": "DSA-2026-014",
}


def threshold(assessment, profile, answers=LOW_ANSWERS):  # type: ignore[no-untyped-def]
    return services.assessment_set_threshold(
        assessment=assessment, profile=profile, answers=answers
    )


def test_the_ema_profile_is_refused_for_a_non_public_release(assessment):
    services.assessment_set_release(assessment=assessment, **DSA)
    with pytest.raises(ApplicationError, match="sets no threshold for a non-public release"):
        threshold(assessment, "ema_policy_0070")
    assessment.refresh_from_db()
    assert assessment.threshold_result is None


def test_the_ema_profile_is_refused_for_a_non_public_release_handled_as_semi_public(assessment):
    services.assessment_set_release(
        assessment=assessment, release_model="non_public", recipient_organization="University X"
    )
    with pytest.raises(ApplicationError, match="semi-public release"):
        threshold(assessment, "ema_policy_0070")


def test_the_ema_profile_for_a_public_release_keeps_its_values_and_source(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    threshold(assessment, "ema_policy_0070", HIGH_ANSWERS)
    r = assessment.threshold_result
    # One value whatever the invasion of privacy, on the maximum risk (EMA/90915/2016 v1.5).
    assert (r["value"], r["measure"], r["release_model"]) == (0.09, "max", "public")
    detail = r["profile_detail"]
    assert detail["values"] == {"low": 0.09, "medium": 0.09, "high": 0.09}
    assert detail["edition"] == "External guidance version 1.5"
    assert "EMA/90915/2016" in detail["source"] and "chapter 3" in detail["threshold_source"]


def test_iso_27559_bounds_the_maximum_in_public_and_the_average_otherwise(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    threshold(assessment, "iso_iec_27559_2022", HIGH_ANSWERS)
    r = assessment.threshold_result
    assert (r["value"], r["measure"]) == (0.05, "max")
    assert r["table"] == {"low": 0.1, "medium": 0.075, "high": 0.05}
    services.assessment_set_release(assessment=assessment, **DSA)
    r = assessment.threshold_result  # recomputed for the new model from the stored answers
    assert (r["value"], r["measure"], r["release_model"]) == (0.05, "average", "non_public")
    assert "IHE" in r["profile_detail"]["read_from"]


def test_before_step_1_no_profile_is_offered(assessment):
    assert assessment.release_model == ""
    with pytest.raises(ApplicationError, match=r"release model \(Step 1\) first"):
        threshold(assessment, "ontario_ipc_2016")


def test_changing_the_release_model_drops_a_profile_that_no_longer_applies(assessment, analyst):
    services.assessment_set_release(assessment=assessment, release_model="public")
    threshold(assessment, "ema_policy_0070")
    stale = services.assessment_set_release(assessment=assessment, user=analyst, **DSA)
    assert "threshold" in stale
    assessment.refresh_from_db()
    assert assessment.threshold_result is None
    event = AuditEvent.objects.filter(action="assessment.release").latest("sequence")
    assert "ema_policy_0070" in event.details["threshold_dropped"]


def step3(client, assessment):  # type: ignore[no-untyped-def]
    return reverse(
        "assessment-step",
        kwargs={
            "org": assessment.organization.slug,
            "assessment_id": assessment.id,
            "slug": "threshold",
        },
    )


def test_the_page_offers_only_the_profiles_of_the_release_model(assessment, analyst, client_for):
    services.assessment_set_release(assessment=assessment, **DSA)
    client = client_for(analyst)
    page = client.get(step3(client, assessment))
    keys = [key for key, _ in page.context["form"].fields["profile"].choices]
    assert keys == ["ontario_ipc_2016", "pdpc_2018", "el_emam_2013", "iso_iec_27559_2022"]
    html = page.content.decode()
    assert 'data-testid="offered-ema_policy_0070"' not in html
    assert "EMA Policy 0070" in html  # listed among the profiles not offered, with why
    answers = {f"q_{k}": v for k, v in LOW_ANSWERS.items()}
    posted = client.post(
        step3(client, assessment), {"profile": "ema_policy_0070", "mode": "profile", **answers}
    )
    assert posted.status_code == 400
    assert "ema_policy_0070 is not one of the available choices" in posted.content.decode()
    assessment.refresh_from_db()
    assert assessment.threshold_result is None


def test_the_api_lists_the_offered_profiles_and_refuses_the_others(assessment, analyst, client_for):
    services.assessment_set_release(assessment=assessment, **DSA)
    api = client_for(analyst)
    path = f"/api/v1/assessments/{assessment.id}/threshold/"
    shown = api.get(path).json()
    assert [p["key"] for p in shown["profiles"]] == [
        "ontario_ipc_2016",
        "pdpc_2018",
        "el_emam_2013",
        "iso_iec_27559_2022",
    ]
    iso = shown["profiles"][-1]
    assert (iso["measure"], iso["values"]["medium"]) == ("average", 0.075)
    assert "27559" in iso["document"] and "IHE" in iso["read_from"]
    refused = api.put(
        path,
        json.dumps({"profile": "ema_policy_0070", "answers": LOW_ANSWERS}),
        content_type="application/json",
    )
    assert refused.status_code == 400
    assert "sets no threshold for a non-public release" in json.dumps(refused.json())
