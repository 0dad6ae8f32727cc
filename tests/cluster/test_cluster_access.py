"""The cluster path's boundaries (issue #27): the Spark Connect address and its token are
never shown back; another organization reaches nothing; only administrators manage the
connection; a bad table name, path or release area is refused naming it; a technique that
needs the whole data is refused with the engine's reason; a manifest edited in the
database is caught."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apps.assessments.cluster_release import cluster_techniques
from apps.assessments.configuration import Technique
from apps.assessments.services import assessment_create
from apps.audit.models import AuditEvent
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.datasets.cluster_connection import spark_connection_set
from apps.datasets.cluster_models import SparkConnection, spark_remote_purpose
from apps.datasets.cluster_paths import (
    cluster_source_check,
    release_path_check,
    release_prefix_check,
)
from apps.datasets.models import Dataset
from apps.engine.rows import ReleaseManifest
from apps.jobs.claiming import job_execute
from apps.reviews.snapshot import cluster_manifest_entry

pytestmark = [pytest.mark.django_db, pytest.mark.spark]

API = "/api/v1"


def _connection_url(org) -> str:  # type: ignore[no-untyped-def]
    return f"{API}/spark-connection/{org.slug}/"


def _registered(client, org, table: Path):  # type: ignore[no-untyped-def]
    import polars as pl

    table.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame({"age": [30, 40, 40], "sex": ["F", "M", "M"]}).write_parquet(table)
    return client.post(
        f"{API}/cluster-datasets/",
        {"organization": org.slug, "table": f"parquet:{table}", "name": "people"},
        content_type="application/json",
    )


def test_the_address_and_its_token_are_never_shown_back(
    custodian, admin_user, analyst, client_for, sail_remote, tmp_path: Path
):
    host_port = sail_remote.removeprefix("sc://")
    admin = client_for(admin_user)
    lake = str(tmp_path / "lake")
    response = admin.put(
        _connection_url(custodian),
        {"remote": sail_remote, "release_prefix": lake + "/"},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["configured"] and response.json()["release_prefix"] == lake
    # with a token (stored without probing: Sail asks for none)
    token = "tok-7f3a9c2e5b1d"
    spark_connection_set(
        organization=custodian,
        user=admin_user,
        remote=f"{sail_remote}/;token={token}",
        release_prefix=lake,
        probe=False,
    )
    stored = SparkConnection.objects.get(organization=custodian)
    assert token not in stored.remote_sealed and host_port not in stored.remote_sealed
    assert crypto.open_text(
        stored.remote_sealed, purpose=spark_remote_purpose(custodian.id)
    ).endswith(token)
    with pytest.raises(crypto.SecretUnreadable):  # bound to this organization
        crypto.open_text(stored.remote_sealed, purpose=spark_remote_purpose(analyst.id))
    spark_connection_set(
        organization=custodian, user=admin_user, remote=sail_remote, release_prefix=lake
    )

    created = _registered(client_for(analyst), custodian, tmp_path / "lake" / "p.parquet")
    assert created.status_code == 201, created.json()
    dataset_id = created.json()["id"]
    answers = [
        response.content,
        created.content,
        admin.get(_connection_url(custodian)).content,
        client_for(analyst).get(_connection_url(custodian)).content,
        admin.get(f"{API}/datasets/{dataset_id}/").content,
        admin.get(f"{API}/jobs/{created.json()['profile_job']}/").content,
        admin.get(f"{API}/audit/").content,
        admin.get(f"/o/{custodian.slug}/cluster/").content,
    ]
    for body in answers:
        text = body.decode()
        assert sail_remote not in text and host_port not in text and token not in text
    events = AuditEvent.objects.filter(action="cluster.connection_set")
    assert events.count() == 3
    assert all(token not in json.dumps(e.details) for e in events)


def test_another_organization_reaches_nothing_and_only_administrators_set_it(
    custodian, admin_user, analyst, reviewer, outsider, client_for, sail_remote, tmp_path: Path
):
    lake = str(tmp_path / "lake")
    payload = {"remote": sail_remote, "release_prefix": lake}
    # an analyst or a reviewer of the organization may not set it: 403
    for user in (analyst, reviewer):
        response = client_for(user).put(
            _connection_url(custodian), payload, content_type="application/json"
        )
        assert response.status_code == 403, response.json()
    assert not SparkConnection.objects.exists()
    client_for(admin_user).put(_connection_url(custodian), payload, content_type="application/json")
    created = _registered(client_for(analyst), custodian, tmp_path / "lake" / "p.parquet")
    assert job_execute(job_id=created.json()["profile_job"])
    dataset = Dataset.objects.get(id=created.json()["id"])
    assert dataset.status == "ready" and dataset.rows == 3
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    # its pages open; what would read a file on this machine says why it cannot
    page = client_for(analyst).get(f"/o/{custodian.slug}/datasets/{dataset.id}/")
    assert page.status_code == 200
    preview = client_for(analyst).get(f"{API}/datasets/{dataset.id}/preview/")
    assert preview.status_code == 409 and "cluster" in preview.json()["message"]

    # an administrator of another organization: 404 everywhere, nothing changed
    other = client_for(outsider)
    assert other.get(_connection_url(custodian)).status_code == 404
    assert (
        other.put(_connection_url(custodian), payload, content_type="application/json").status_code
        == 404
    )
    assert other.delete(_connection_url(custodian)).status_code == 404
    response = _registered(other, custodian, tmp_path / "lake" / "q.parquet")
    assert response.status_code == 404
    assert other.get(f"{API}/datasets/{created.json()['id']}/").status_code == 404
    check = f"{API}/assessments/{assessment.id}/release/cluster-check/"
    assert other.get(check).status_code == 404
    assert other.get(f"/o/{custodian.slug}/cluster/").status_code == 404
    assert SparkConnection.objects.get().organization == custodian
    # its own organization has no connection: registering a table there is refused
    own = outsider.memberships.get().organization
    response = _registered(other, own, tmp_path / "lake" / "r.parquet")
    assert response.status_code == 400
    assert "no Spark connection" in response.json()["message"]
    # a reviewer may read whether there is one, not register a table
    assert client_for(reviewer).get(_connection_url(custodian)).json()["configured"]
    assert _registered(client_for(reviewer), custodian, tmp_path / "s.parquet").status_code == 403
    # the check of a version not yet approved is refused
    assert client_for(reviewer).get(check).status_code == 403


def test_a_wrong_address_is_refused_when_it_is_set(custodian, admin_user, client_for, tmp_path):
    response = client_for(admin_user).put(
        _connection_url(custodian),
        {"remote": "sc://127.0.0.1:1", "release_prefix": str(tmp_path)},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "cannot reach the Spark Connect server" in response.json()["message"]
    response = client_for(admin_user).put(
        _connection_url(custodian),
        {"remote": "http://spark:15002", "release_prefix": str(tmp_path)},
        content_type="application/json",
    )
    assert response.status_code == 400 and "sc://HOST:PORT" in response.json()["message"]
    assert not SparkConnection.objects.exists()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("table:claims; DROP TABLE x", "is not a table name"),
        ("table:", "is not a table name"),
        ("relative/claims.parquet", "is not a cluster path"),
        ("/lake/../etc/claims", "'.' or '..'"),
        ("csv:/lake/claims.csv", "CSV file is uploaded"),
        ("ftp://host/claims", "is not a cluster path"),
    ],
)
def test_a_bad_table_or_path_is_refused_naming_it(text: str, words: str) -> None:
    with pytest.raises(ApplicationError, match=words.replace("(", r"\(").replace(".", r"\.")):
        cluster_source_check(text)


def test_good_tables_and_paths_are_read_as_the_engine_reads_them() -> None:
    assert cluster_source_check("table:lake.claims.y2024").table == "lake.claims.y2024"
    assert cluster_source_check("delta:s3a://lake/claims").format == "delta"
    assert cluster_source_check("/lake/claims.parquet").path == "/lake/claims.parquet"


def test_a_release_path_outside_the_release_area_is_refused() -> None:
    assert release_prefix_check("s3a://lake/releases/") == "s3a://lake/releases"
    assert release_path_check("s3a://lake/releases", "s3a://lake/releases/org/a1/v1/j") == (
        "s3a://lake/releases/org/a1/v1/j"
    )
    for path, words in [
        ("s3a://lake/releases-other/x", "outside the organization's release area"),
        ("s3a://lake/releases", "outside the organization's release area"),
        ("s3a://other/releases/x", "outside the organization's release area"),
        ("s3a://lake/releases/../raw/x", "'.' or '..'"),
    ]:
        with pytest.raises(ApplicationError, match=words.replace(".", r"\.")) as refused:
            release_path_check("s3a://lake/releases", path)
        assert refused.value.status in (400, 403)
    with pytest.raises(ApplicationError, match="not a cluster path"):
        release_prefix_check("releases")


def test_a_technique_that_needs_the_whole_data_is_refused_with_the_engines_reason() -> None:
    rounding = Technique(technique="rounding", column="income", base=100.0)
    assert len(cluster_techniques([rounding], quasi=["age"], k=5)) == 1
    for entry in (
        Technique(technique="microaggregation", column="income", k=3),
        Technique(technique="local_suppression", importance={"age": 1.0}),
        Technique(technique="noise", column="income", scale=0.1, kind="additive"),
    ):
        with pytest.raises(ApplicationError, match="cannot run on a cluster table") as refused:
            cluster_techniques([rounding, entry], quasi=["age"], k=5)
        assert "whole" in refused.value.message or "every record" in refused.value.message


def test_a_manifest_edited_in_the_database_stops_the_submission() -> None:
    manifest = ReleaseManifest.from_dict(
        {
            "format": "deidweb-release-manifest/1",
            "location": "/lake/releases/x",
            "rows": 10,
            "columns": [["age", "string"]],
            "files": [{"name": "part-0.parquet", "bytes": 100, "rows": 10, "sha256": "a" * 64}],
        }
    )
    stored = {
        "location": manifest.location,
        "manifest": manifest.to_dict(),
        "digest": manifest.digest,
    }
    entry = cluster_manifest_entry(stored, check=True)
    assert entry["sha256"] == manifest.digest and entry["rows"] == 10 and entry["files"] == 1
    stored["manifest"]["files"][0]["sha256"] = "b" * 64  # a file's digest replaced
    with pytest.raises(ApplicationError, match="manifest changed after Step 7"):
        cluster_manifest_entry(stored, check=True)
