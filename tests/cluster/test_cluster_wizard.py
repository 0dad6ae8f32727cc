"""A cluster table through the whole wizard on Sail (issue #27): the same figures as the
same rows uploaded as a file; the approved manifest checked, and tampering after the
approval refused."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from apps.audit.models import AuditEvent
from apps.reports.content import report_html
from tests.cluster.helpers import approve, assessed, connect, uploaded_and_cluster

pytestmark = [pytest.mark.django_db, pytest.mark.spark]

API = "/api/v1"

SAME = (
    "rows_in",
    "rows_out",
    "suppressed_rows",
    "suppressed_share",
    "passes",
    "levels",
    "level_labels",
    "risk_before",
    "risk_after",
    "distributions",
    "release_population",
)


def _risk_figures(result: dict) -> dict:
    keys = ("data_risk", "max_risk", "average_risk", "strict_average_risk", "profile")
    return {
        **{k: result[k] for k in keys},
        "small_cells": result["small_cells"],
        "drivers": result["drivers"],
        "attribute_disclosure": result["attribute_disclosure"],
    }


def test_a_cluster_table_goes_through_the_wizard_with_the_figures_of_the_uploaded_file(
    custodian, analyst, reviewer, admin_user, client_for, sail_remote, tmp_path: Path
):
    lake = tmp_path / "lake"
    connect(custodian, admin_user, sail_remote, lake)
    uploaded, cluster = uploaded_and_cluster(custodian, analyst, lake)

    # the profile: rows, missing and distinct counted on the cluster, as for the file
    assert cluster.rows == uploaded.rows == 400
    assert cluster.source_format == "cluster" and cluster.parquet_path == ""
    file_columns = {c["name"]: c for c in uploaded.profile["columns"]}
    for column in cluster.profile["columns"]:
        same = file_columns[column["name"]]
        for key in ("missing", "distinct", "unique_share", "inferred_type", "top_values"):
            assert column[key] == same[key], (column["name"], key)
    roles = lambda d: sorted(d.variables.values_list("name", "suggested_role"))  # noqa: E731
    assert roles(cluster) == roles(uploaded)

    on_file = assessed(custodian, analyst, uploaded)
    on_cluster = assessed(custodian, analyst, cluster)

    # Step 4 and Step 7's search: the same figures
    assert _risk_figures(on_cluster.risk_result) == _risk_figures(on_file.risk_result)
    assert on_cluster.risk_result["profile"]["rows"] == 400
    for key in ("levels", "solution"):
        assert on_cluster.search_result[key] == on_file.search_result[key], key

    # Step 7's release: written on the cluster below the release area, the same figures
    applied, reference = on_cluster.apply_result, on_file.apply_result
    for key in SAME:
        assert applied[key] == reference[key], key
    assert applied["utility"] == reference["utility"]
    # the checks reading released rows: every row read back (400 < MEASURED_ROWS)
    assert applied["measured_on"] == {
        "original_rows": 400,
        "released_rows": applied["rows_out"],
        "of_released": applied["rows_out"],
    }
    for key in ("identifier_scan", "released_columns", "attribute_disclosure"):
        assert applied.get(key) == reference.get(key), key
    cluster_release = applied["cluster_release"]
    location = Path(cluster_release["location"])
    assert str(location).startswith(str(lake / "releases" / custodian.slug))
    files = sorted(location.glob("*.parquet"))
    assert files and len(files) == len(cluster_release["manifest"]["files"])
    released = pl.read_parquet(files)
    assert released.height == applied["rows_out"] == cluster_release["manifest"]["rows"]
    assert "email" not in released.columns or released["email"].null_count() == 400
    assert on_cluster.output_parquet_path == on_cluster.output_csv_path == ""

    # the reviewer approves the manifest's digest; the report prints it
    decision = approve(on_cluster, analyst, reviewer)
    digest = cluster_release["digest"]
    assert decision.digests["release_manifest"] == digest
    html = report_html(assessment=on_cluster, decision=decision)
    assert digest in html

    # the release check: the files on the cluster are the approved ones ...
    check = f"{API}/assessments/{on_cluster.id}/release/cluster-check/"
    response = client_for(reviewer).get(check)
    assert response.status_code == 200, response.json()
    assert response.json()["ok"] and response.json()["manifest_sha256"] == digest
    assert AuditEvent.objects.filter(action="release.cluster_verified").count() == 1

    # ... until one is changed on the cluster after the approval: refused and recorded
    first = pl.read_parquet(files[0])
    first.reverse().write_parquet(files[0])
    response = client_for(reviewer).get(check)
    assert response.status_code == 409
    body = response.json()
    assert body["extra"]["changed"] == [files[0].name]
    refused = AuditEvent.objects.get(action="release.cluster_refused")
    assert refused.details["changed"] == [files[0].name]
    assert refused.details["approved_manifest_sha256"] == digest

    # a file added next to them is refused too
    first.write_parquet(location / "part-zz-added.parquet")
    response = client_for(reviewer).get(check)
    assert response.status_code == 409
    assert response.json()["extra"]["added"] == ["part-zz-added.parquet"]
