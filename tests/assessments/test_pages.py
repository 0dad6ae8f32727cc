"""Every step page renders, for the analyst and the reviewer, before and after its results."""

import pytest
from django.urls import reverse

from apps.assessments import deidentify, release_apply, services, steps
from apps.jobs.claiming import job_execute
from tests.assessments.conftest import LOW_ANSWERS, WAIVER
from tests.justify import justify_all

# Every step's page but Step 2's, which is the data set's classification page.
SLUGS = tuple(step.slug for step in steps.STEPS if step.slug != "classification")


def url(assessment, slug=None):
    kwargs = {"org": assessment.organization.slug, "assessment_id": assessment.id}
    if slug is None:
        return reverse("assessment-detail", kwargs=kwargs)
    return reverse("assessment-step", kwargs={**kwargs, "slug": slug})


def complete(assessment, analyst):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    for start in (
        services.assessment_start_risk,
        deidentify.assessment_start_search,
        release_apply.assessment_start_apply,
    ):
        job = start(assessment=assessment, user=analyst)
        job_execute(job_id=str(job.id))
        job.refresh_from_db()
        assert job.status == "succeeded", job.error
        assessment.refresh_from_db()


def test_pages_render_empty_and_complete(client_for, analyst, reviewer, assessment):
    for user in (analyst, reviewer):
        client = client_for(user)
        assert client.get(url(assessment)).status_code == 200
        for slug in SLUGS:
            assert client.get(url(assessment, slug)).status_code == 200, slug
    complete(assessment, analyst)
    for user in (analyst, reviewer):
        client = client_for(user)
        for slug in SLUGS:
            response = client.get(url(assessment, slug))
            assert response.status_code == 200, (user.username, slug)
    page = client_for(analyst).get(url(assessment, "data-risk")).content.decode()
    assert 'data-testid="max-risk">1<' in page  # 4 significant digits, no padding
    assert "<svg" in page and "<table" in page


def test_reviewer_cannot_post_and_outsider_gets_404(client_for, reviewer, outsider, assessment):
    response = client_for(reviewer).post(url(assessment, "release"), {"release_model": "public"})
    assert response.status_code == 302
    assessment.refresh_from_db()
    assert assessment.release_model == ""
    for slug in (None, *SLUGS):
        assert client_for(outsider).get(url(assessment, slug)).status_code == 404


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_release_download_locked_until_approval_and_secrets_for_admins(
    client_for, analyst, admin_user, reviewer, assessment, fmt
):
    complete(assessment, analyst)
    kwargs = {"org": assessment.organization.slug, "assessment_id": assessment.id}
    download = reverse("assessment-release-download", kwargs={**kwargs, "fmt": fmt})
    for user in (analyst, admin_user, reviewer):
        assert client_for(user).get(download).status_code == 403
    preview = reverse("assessment-release-preview", kwargs=kwargs)
    assert client_for(analyst).get(preview).status_code == 200
    assert client_for(reviewer).get(preview).status_code == 403
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit

    services.assessment_accept_utility(assessment=assessment, note="Enough for the study.")
    justify_all(assessment)
    assessment_submit(
        assessment=assessment, user=analyst, note="Ready for review.", intruder_waiver=WAIVER
    )
    review_decide(assessment=assessment, reviewer=reviewer, decision="approve", reasons="Fine.")
    response = client_for(reviewer).get(download)
    assert response.status_code == 200
    assert b"".join(response.streaming_content)
