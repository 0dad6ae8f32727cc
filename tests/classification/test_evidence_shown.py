"""Reviewers read why a column was suggested, never a value of it: the masked examples of
free text are sampled values, so only analysts and administrators get them (issue 15)."""

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.classification.detectors import EXAMPLE_PREFIX
from apps.classification.services import variables_create_from_profile
from apps.datasets.profiling import profile_parquet

NOTES = pl.DataFrame(
    {
        "comments": [
            f"Seen on the ward, pain for {i} days. "
            + ("Call 416-555-0199." if i % 4 == 0 else "No concerns.")
            + (" Ward clerk Zebulon." if i % 2 else "")
            for i in range(20)
        ],
        "age": [str(30 + i) for i in range(19)] + ["97"],
        "birth_date": ["1930-02-03"] + [f"19{60 + i}-01-01" for i in range(19)],
    }
)


@pytest.fixture
def dataset(custodian, analyst, tmp_path):
    from apps.datasets.services import dataset_upload

    dataset = dataset_upload(
        organization=custodian,
        user=analyst,
        upload=SimpleUploadedFile("notes.csv", NOTES.write_csv().encode()),
    )
    path = tmp_path / "notes.parquet"
    NOTES.write_parquet(path)
    variables_create_from_profile(dataset=dataset, profile=profile_parquet(path), sample=NOTES)
    return dataset


def evidence_in_api(client, dataset):
    response = client.get(f"/api/v1/variables/?dataset={dataset.id}")
    assert response.status_code == 200
    return {v["name"]: v["suggestion_evidence"] for v in response.json()}


def test_reviewers_get_counts_without_the_sampled_examples(client_for, analyst, reviewer, dataset):
    analyst_sees = evidence_in_api(client_for(analyst), dataset)
    reviewer_sees = evidence_in_api(client_for(reviewer), dataset)
    examples = [e for e in analyst_sees["comments"] if e.startswith(EXAMPLE_PREFIX)]
    assert examples and "[PHONE]" in examples[0]
    assert reviewer_sees["comments"] == [
        e for e in analyst_sees["comments"] if not e.startswith(EXAMPLE_PREFIX)
    ]
    assert any("phone numbers found" in e for e in reviewer_sees["comments"])
    page = client_for(reviewer).get(
        reverse(
            "dataset-classify", kwargs={"org": dataset.organization.slug, "dataset_id": dataset.id}
        )
    )
    text = page.content.decode()
    assert "phone numbers found" in text
    assert "Seen on the ward" not in text and "Zebulon" not in text


def test_no_exact_age_or_birth_date_in_anyones_evidence(client_for, analyst, reviewer, dataset):
    for user in (analyst, reviewer):
        seen = evidence_in_api(client_for(user), dataset)
        assert any("ages over 89 present" in e for e in seen["age"]), seen["age"]
        assert not any("97" in e for e in seen["age"])
        assert any("people born before" in e for e in seen["birth_date"]), seen["birth_date"]
        assert not any("1930" in e for e in seen["birth_date"])
