"""Issue 23, item 9: text a column cannot hold is refused by name, on every write path.

A 5,000-character data set name was stored (SQLite) or answered 500 (PostgreSQL's
``varchar(200)``); a NUL character inside free JSON settings (a hierarchy's labels, a
dictionary key) reached ``jsonb`` and answered 500. The guard behind every form and
serializer: a ``pre_save`` check of every model's text and JSON fields
(``apps.core.text_limits``): a NUL in a stored JSON value or key is refused by name."""

from __future__ import annotations

import json

import pytest
from django.apps import apps as django_apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.urls import reverse

from apps.accounts.models import Organization
from apps.assessments.models import Assessment, HierarchySpec
from apps.core.errors import ApplicationError
from apps.core.text_limits import refuse_unstorable_text
from apps.datasets.models import Dataset
from tests.assessments.conftest import LOW_ANSWERS, PEOPLE

pytestmark = pytest.mark.django_db
API = "/api/v1/"


def _project_text_fields() -> list[tuple[type[models.Model], models.Field]]:  # type: ignore[type-arg]
    found = []
    for model in django_apps.get_models():
        if not model.__module__.startswith("apps."):
            continue
        for field in model._meta.concrete_fields:
            if isinstance(field, models.CharField | models.TextField) and not field.primary_key:
                found.append((model, field))
    return found


FIELDS = _project_text_fields()


def test_the_guard_covers_every_text_field_of_every_model():
    """Each of the project's text fields, too long or holding a NUL, is refused by name
    before it is written (no database involved: the guard runs before the INSERT)."""
    assert len(FIELDS) > 60
    for model, field in FIELDS:
        values = ["ok\x00ok"]
        if isinstance(field, models.CharField) and field.max_length:
            values.append("x" * (field.max_length + 1))
        for value in values:
            instance = model()
            setattr(instance, field.attname, value)
            with pytest.raises(ApplicationError) as refused:
                refuse_unstorable_text(model, instance)
            assert refused.value.extra["field"] == field.name, (model, field.name)
            message = refused.value.message
            assert str(field.verbose_name) in message
            if "\x00" in value:
                assert "contains a NUL character" in message
            else:
                limit = f"{field.max_length:,}"
                assert f"at most {limit} are allowed" in message, message


def test_every_save_goes_through_the_guard(custodian):
    """Not only the services: a save anywhere (admin, shell, a job) is checked."""
    custodian.name = "N" * 201
    with pytest.raises(ApplicationError, match="organization's name has 201 characters"):
        custodian.save()
    assert Organization.objects.get(id=custodian.id).name == "Custodian"


def _upload(client, organization, **fields):  # type: ignore[no-untyped-def]
    return client.post(
        f"{API}datasets/",
        {
            "organization": organization.slug,
            "file": SimpleUploadedFile(
                fields.pop("filename", "people.csv"), PEOPLE.write_csv().encode()
            ),
            **fields,
        },
    )


def test_api_upload_with_a_5000_character_name_is_refused(client_for, analyst, custodian):
    response = _upload(client_for(analyst), custodian, name="N" * 5000)
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["extra"]["fields"]["name"] == ["Ensure this field has no more than 200 characters."]
    assert not Dataset.objects.exists()


def test_a_long_file_name_gives_a_shortened_name(client_for, analyst, custodian):
    """The name taken from the file's name is cut to the 200 characters a name holds, and the
    stored copy gets a short name of its own (a path holds 300): a 201, not a 400 or a 500.
    (Django's upload parser keeps at most 255 characters of a file name.)"""
    client = client_for(analyst)
    for stem in ("f" * 240, "g" * 300):
        response = _upload(client, custodian, filename=stem + ".csv")
        assert response.status_code == 201, response.content
        dataset = Dataset.objects.get(id=response.json()["id"])
        assert dataset.name == stem[:200]
        assert dataset.original_filename.endswith(".csv")
        assert dataset.original_filename.startswith(stem[:200])
        assert dataset.original_path.endswith("/original/upload.csv")


def test_the_page_upload_says_the_name_is_too_long(client_for, analyst, custodian):
    page = client_for(analyst).post(
        reverse("dataset-upload", kwargs={"org": custodian.slug}),
        {"name": "N" * 5000, "file": SimpleUploadedFile("p.csv", PEOPLE.write_csv().encode())},
    )
    assert page.status_code in (200, 400)
    assert "Ensure this value has at most 200 characters" in page.content.decode()
    assert not Dataset.objects.exists()


def test_service_writes_are_checked_too(custodian, analyst, classified):
    from apps.assessments.services import assessment_create

    with pytest.raises(ApplicationError, match="assessment's title has 5,000 characters"):
        assessment_create(
            organization=custodian, dataset=classified, user=analyst, title="T" * 5000
        )
    assert not Assessment.objects.exists()


# --------------------------------------------------------------------------- NUL in JSON


@pytest.fixture
def api_ready(client_for, analyst, classified):  # type: ignore[no-untyped-def]
    client = client_for(analyst)
    created = _json(client, "post", f"{API}assessments/", {"dataset": str(classified.id)})
    aid = created.json()["id"]
    for step, body in (
        ("release", {"release_model": "public"}),
        ("threshold", {"answers": LOW_ANSWERS}),
        ("context", {}),
    ):
        assert _json(client, "put", f"{API}assessments/{aid}/{step}/", body).status_code == 200
    return client, aid


def _json(client, method, url, body):  # type: ignore[no-untyped-def]
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize(
    ("body", "where"),
    [
        (
            {"kind": "interval", "params": {"widths": [10], "bottom_label": "under\x0010"}},
            "bottom_label",
        ),
        (
            {"kind": "categorical", "params": {"levels": [{"F\x00": ["F"], "M": ["M"]}]}},
            "levels[0].F",
        ),
    ],
)
def test_a_nul_in_stored_json_is_refused_by_name(api_ready, body, where):
    client, aid = api_ready
    column = "age" if body["kind"] == "interval" else "sex"
    response = _json(client, "put", f"{API}assessments/{aid}/hierarchies/{column}/", body)
    assert response.status_code == 400, response.content
    assert response.json() == {
        "message": f"The hierarchy spec's params contains a NUL character (at {where}), which "
        "no field accepts.",
        "extra": {"field": "params", "max_length": None},
    }
    assert not HierarchySpec.objects.filter(assessment_id=aid, column=column).exists()


def test_a_nul_where_nothing_reads_it_is_left_alone(api_ready):
    """An unknown key is ignored, as any unknown key: nothing of it is stored."""
    client, aid = api_ready
    response = _json(
        client,
        "put",
        f"{API}assessments/{aid}/deidentify/config/",
        {"masking": {}, "max_levels": {}, "unknown\x00": "x\x00"},
    )
    assert response.status_code == 200, response.content


def test_json_without_nul_still_parses(api_ready):
    client, aid = api_ready
    response = _json(
        client,
        "put",
        f"{API}assessments/{aid}/hierarchies/age/",
        {"kind": "interval", "params": {"widths": [10], "bottom_label": "under 10 \\u0000"}},
    )
    assert response.status_code == 200, response.content  # an escaped backslash is text
