"""Organization isolation and roles, for pages and API alike (custodian / reviewer / outsider)."""

import io

import pytest
from django.urls import reverse

from apps.datasets.models import Dataset
from apps.jobs.models import Job

CSV = b"name,age,sex\nAlice,34,F\nBob,51,M\nCarla,34,F\n"


@pytest.fixture
def dataset(analyst, custodian):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.datasets.services import dataset_upload

    return dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("people.csv", CSV, content_type="text/csv"),
    )


def page_urls(org, dataset):
    job = dataset.profile_job
    return [
        reverse("org-home", kwargs={"org": org.slug}),
        reverse("dataset-list", kwargs={"org": org.slug}),
        reverse("dataset-detail", kwargs={"org": org.slug, "dataset_id": dataset.id}),
        reverse("dataset-classify", kwargs={"org": org.slug, "dataset_id": dataset.id}),
        reverse("job-detail", kwargs={"org": org.slug, "job_id": job.id}),
        reverse("job-progress", kwargs={"org": org.slug, "job_id": job.id}),
    ]


def test_members_see_their_organization_pages(client_for, analyst, reviewer, custodian, dataset):
    for user in (analyst, reviewer):
        client = client_for(user)
        for url in page_urls(custodian, dataset):
            assert client.get(url).status_code == 200, (user.username, url)


def test_outsider_gets_404_on_every_page_and_api_object(client_for, outsider, custodian, dataset):
    client = client_for(outsider)
    for url in page_urls(custodian, dataset):
        assert client.get(url).status_code == 404, url
    # The outsider's own organization slug does not unlock someone else's objects either.
    own = outsider.memberships.get().organization
    url = reverse("dataset-detail", kwargs={"org": own.slug, "dataset_id": dataset.id})
    assert client.get(url).status_code == 404
    for api in (
        f"/api/v1/datasets/{dataset.id}/",
        f"/api/v1/datasets/{dataset.id}/profile/",
        f"/api/v1/datasets/{dataset.id}/preview/",
        f"/api/v1/jobs/{dataset.profile_job_id}/",
        f"/api/v1/classification/{dataset.id}/status/",
        f"/api/v1/organizations/{custodian.slug}/",
    ):
        assert client.get(api).status_code == 404, api
    assert client.delete(f"/api/v1/datasets/{dataset.id}/").status_code == 404
    assert client.post(f"/api/v1/jobs/{dataset.profile_job_id}/cancel/").status_code == 404
    assert client.get("/api/v1/datasets/").json()["results"] == []
    assert client.get("/api/v1/jobs/").json()["results"] == []
    assert Dataset.objects.filter(id=dataset.id).exists()


def test_outsider_cannot_upload_into_another_organization(client_for, outsider, custodian):
    client = client_for(outsider)
    url = reverse("dataset-upload", kwargs={"org": custodian.slug})
    response = client.post(url, {"file": io.BytesIO(CSV)})
    assert response.status_code == 404
    api = client.post(
        "/api/v1/datasets/", {"organization": custodian.slug, "file": _named(CSV, "x.csv")}
    )
    assert api.status_code == 404
    assert not Dataset.objects.filter(organization=custodian).exists()


def test_reviewer_reads_but_cannot_upload_delete_cancel_or_see_raw_values(
    client_for, reviewer, custodian, dataset
):
    client = client_for(reviewer)
    upload = reverse("dataset-upload", kwargs={"org": custodian.slug})
    assert client.get(upload).status_code == 403
    assert (
        client.post(
            "/api/v1/datasets/", {"organization": custodian.slug, "file": _named(CSV, "x.csv")}
        ).status_code
        == 403
    )
    assert client.delete(f"/api/v1/datasets/{dataset.id}/").status_code == 403
    assert client.post(f"/api/v1/jobs/{dataset.profile_job_id}/cancel/").status_code == 403
    assert client.get(f"/api/v1/datasets/{dataset.id}/preview/").status_code == 403
    preview = reverse("dataset-preview", kwargs={"org": custodian.slug, "dataset_id": dataset.id})
    assert client.get(preview).status_code == 403
    assert client.get(f"/api/v1/datasets/{dataset.id}/").json()["name"] == "people"
    assert Job.objects.get(id=dataset.profile_job_id).status == "queued"


def test_api_lists_only_own_organizations_with_role(client_for, analyst, custodian, outsider):
    data = client_for(analyst).get("/api/v1/organizations/").json()["results"]
    assert [(o["slug"], o["role"]) for o in data] == [(custodian.slug, "analyst")]


def test_anonymous_is_sent_to_sign_in_and_api_refuses(client, custodian):
    response = client.get(reverse("org-home", kwargs={"org": custodian.slug}))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert client.get("/api/v1/datasets/").status_code in (401, 403)


def _named(content: bytes, name: str):
    handle = io.BytesIO(content)
    handle.name = name
    return handle
