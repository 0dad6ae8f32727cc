"""Run inside the embedded stack's settings (``python -m tests.jobs.embedded_setup``):

- ``setup``: an organization with two analysts (API keys), a data set read and profiled
  here, and two assessments ready for Step 4; prints them as JSON;
- ``burst N``: queues N jobs at once, half long, half interactive; prints their ids.
"""

from __future__ import annotations

import json
import sys

import django


def setup() -> dict[str, object]:
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.accounts.services import api_token_create, membership_set, organization_create
    from apps.assessments.services import assessment_create
    from apps.classification.services import variables_accept_suggestions
    from apps.datasets.services import dataset_upload
    from apps.jobs.claiming import job_execute
    from tests.assessments.conftest import trade_off_people

    organization = organization_create(name="Embedded", slug="embedded")
    users = []
    for name in ("ana", "bo"):
        user = get_user_model().objects.create_user(username=name, password=f"pw-{name}-x7Q!")
        membership_set(organization=organization, user=user, role="analyst")
        users.append(user)
    dataset = dataset_upload(
        organization=organization,
        user=users[0],
        upload=SimpleUploadedFile("people.csv", trade_off_people(300).write_csv().encode()),
    )
    job_execute(job_id=str(dataset.profile_job_id))  # read and profiled here, not queued
    dataset.refresh_from_db()
    variables_accept_suggestions(dataset=dataset, user=users[0])
    assessments = [
        str(
            ready_for_risk(
                assessment_create(organization=organization, dataset=dataset, user=users[0])
            ).id
        )
        for _ in range(2)
    ]
    keys = [api_token_create(user=user, name="load")[1] for user in users]
    return {
        "organization": organization.slug,
        "dataset": str(dataset.id),
        "assessments": assessments,
        "keys": keys,
    }


def ready_for_risk(assessment):  # type: ignore[no-untyped-def]
    """Steps 1, 3 and 5 of an assessment done (a non-public release, low invasion, every
    control in place): ready for Step 4."""
    from apps.assessments import services
    from tests.assessments.conftest import CONTROLS_ALL_YES, LOW_ANSWERS, MOTIVES_LOW

    services.assessment_set_release(
        assessment=assessment,
        release_model="non_public",
        recipient_organization="University X",
        agreement_kind="dsa",
        agreement_reference="DSA-7",
    )
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(
        assessment=assessment,
        answers={
            "controls": CONTROLS_ALL_YES,
            "motives": MOTIVES_LOW,
            "prevalence": 0.001,
            "prevalence_source": "Registry",
        },
    )
    return assessment


def burst(count: int) -> list[str]:
    from apps.accounts.models import Organization
    from apps.assessments.models import Assessment
    from apps.jobs.queueing import job_create

    organization = Organization.objects.get(slug="embedded")
    assessment = Assessment.objects.filter(organization=organization).first()
    assert assessment is not None
    jobs = []
    for i in range(count):
        kind, params = (
            ("profile", {"n": i % 7})
            if i % 2
            else ("assessment-risk", {"n": i % 5, "assessment_id": str(assessment.id)})
        )
        jobs.append(job_create(organization=organization, kind=kind, params=params))
    return [str(job.id) for job in jobs]


if __name__ == "__main__":
    django.setup()
    command = sys.argv[1]
    result = setup() if command == "setup" else burst(int(sys.argv[2]))
    print(json.dumps(result))
