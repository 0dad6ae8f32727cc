"""The load test's data: an organization, its analysts with passwords and API keys, one
profiled data set with its classification accepted, and the assessments the jobs run on."""

from __future__ import annotations

import json
import secrets
import tempfile
from pathlib import Path


def seed(out: Path, users: int, rows: int, assessments: int) -> None:
    """Runs inside Django (production settings): write the accounts and ids to `out`."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.files import File

    from apps.accounts.models import Role
    from apps.accounts.services import (
        api_token_create,
        membership_set,
        organization_create,
        user_set_password,
    )
    from apps.assessments.services import assessment_create
    from apps.classification.services import variables_accept_suggestions
    from apps.datasets.demo import write_demo_csv
    from apps.datasets.services import dataset_upload
    from apps.jobs.claiming import job_execute

    organization = organization_create(name="Load test", slug="load")
    User = get_user_model()
    accounts = []
    for number in range(users):
        username = f"load-analyst-{number:02d}"
        user = User.objects.create(username=username, email=f"{username}@example.org")
        password = secrets.token_urlsafe(16)
        user_set_password(user=user, password=password)
        membership_set(organization=organization, user=user, role=Role.ANALYST)
        _, key = api_token_create(user=user, name="load test")
        accounts.append({"username": username, "password": password, "token": key})
    first = User.objects.get(username="load-analyst-00")
    with tempfile.TemporaryDirectory() as scratch:
        path = write_demo_csv(Path(scratch) / "register.csv", n=rows)
        with path.open("rb") as handle:
            dataset = dataset_upload(
                organization=organization,
                user=first,
                upload=File(handle, name=path.name),  # type: ignore[arg-type]
                name="Load test register",
            )
    job_execute(job_id=str(dataset.profile_job_id))
    dataset.refresh_from_db()
    assert dataset.status == "ready", dataset.status
    variables_accept_suggestions(dataset=dataset, user=first)
    ids = [
        str(
            assessment_create(
                organization=organization, dataset=dataset, user=first, title=f"Load {n}"
            ).id
        )
        for n in range(assessments)
    ]
    out.write_text(
        json.dumps(
            {
                "org": organization.slug,
                "users": accounts,
                "dataset": str(dataset.id),
                "assessments": ids,
                "jobs": [str(dataset.profile_job_id)],
            }
        )
    )
