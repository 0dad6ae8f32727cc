"""List pages (data sets, assessments, the organization's home): paged, newest first, and
as many database queries for 60 rows as for 3 (the data set table looked up the
organization once per row; the load test's slowest page)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.assessments.models import Assessment
from apps.core.pagination import LIST_PAGE_SIZE
from apps.datasets.models import Dataset

pytestmark = pytest.mark.django_db


def _datasets(organization, count: int) -> list[Dataset]:  # type: ignore[no-untyped-def]
    made = []
    start = timezone.now() - timedelta(days=1)
    for number in range(count):
        dataset = Dataset.objects.create(
            organization=organization, name=f"Register {number:03d}", original_filename="r.csv",
            source_format="csv", size_bytes=1, sha256="0" * 64, parquet_sha256="0" * 64,
            parquet_path="x", rows=1000 + number, column_count=7, status="ready",
            profile={"rows": 1, "columns": []},
        )  # fmt: skip
        # Created one minute apart: "newest first" has one answer.
        Dataset.objects.filter(id=dataset.id).update(created_at=start + timedelta(minutes=number))
        made.append(dataset)
    return made


def _names(html: str, prefix: str) -> list[str]:
    return re.findall(rf">({prefix} \d+)</a>", html)


def _queries(client, url: str) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_data_sets_are_listed_fifty_a_page_newest_first(client_for, analyst, custodian):  # type: ignore[no-untyped-def]
    _datasets(custodian, 60)
    client = client_for(analyst)
    url = f"/o/{custodian.slug}/datasets/"
    first = client.get(url).content.decode()
    assert _names(first, "Register") == [f"Register {n:03d}" for n in range(59, 9, -1)]
    assert "60 data sets, page 1 of 2." in first
    assert 'href="?page=2" rel="next"' in first
    second = client.get(url + "?page=2").content.decode()
    assert _names(second, "Register") == [f"Register {n:03d}" for n in range(9, -1, -1)]
    assert 'href="?page=1" rel="prev"' in second
    # Past the end: the last page; not a number: the first.
    assert _names(client.get(url + "?page=9").content.decode(), "Register")[0] == "Register 009"
    assert _names(client.get(url + "?page=x").content.decode(), "Register")[0] == "Register 059"
    assert LIST_PAGE_SIZE == 50


def test_list_pages_cost_the_same_queries_for_3_rows_and_for_60(  # type: ignore[no-untyped-def]
    client_for, analyst, custodian
):
    client = client_for(analyst)
    made = _datasets(custodian, 3)
    for dataset in made:
        Assessment.objects.create(
            organization=custodian, dataset=dataset, title=f"Plan {dataset.name[-3:]}"
        )
    urls = [
        f"/o/{custodian.slug}/datasets/",
        f"/o/{custodian.slug}/assessments/",
        f"/o/{custodian.slug}/",
    ]
    few = [_queries(client, url) for url in urls]
    for dataset in _datasets(custodian, 57):
        Assessment.objects.create(
            organization=custodian, dataset=dataset, title=f"Plan {dataset.name[-3:]}"
        )
    many = [_queries(client, url) for url in urls]
    assert many == few
    html = client.get(urls[1]).content.decode()
    assert "60 assessments, page 1 of 2." in html
    assert len(_names(html, "Plan")) == 50
