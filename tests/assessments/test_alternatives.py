"""Step 7's alternatives in words, sortable, and two of them side by side (#16), on the
``traded`` register: 400 people, 12 of them aged 85–89. The optimum bands age by five years and
suppresses those 12; the alternative suppresses age (*) and keeps everyone."""

from __future__ import annotations

import re

import polars as pl
import pytest
from django.urls import reverse

from apps.assessments.compare import alternatives_compare
from apps.assessments.solution_words import alternatives_rows
from apps.core.errors import ApplicationError
from tests.assessments.conftest import trade_off_people

pytestmark = pytest.mark.django_db


def test_rows_name_each_solution_in_words_with_its_share_and_risks(traded):
    rows = alternatives_rows(traded.search_result, traded.chosen_levels)
    assert [r["words"] for r in rows] == [
        "age: suppressed (*) · sex: kept as is",
        "age: intervals of 5 · sex: kept as is",
    ]
    kept, banded = rows
    assert (kept["suppressed_rows"], kept["suppressed_share"]) == (0, 0.0)
    assert (banded["suppressed_rows"], banded["suppressed_share"]) == (12, 12 / 400)
    assert (kept["is_chosen"], kept["is_optimum"]) == (True, False)
    assert (banded["is_chosen"], banded["is_optimum"]) == (False, True)
    sexes = trade_off_people().get_column("sex").value_counts()
    smallest = min(sexes.get_column("count").to_list())
    assert kept["max_risk"] == pytest.approx(1 / smallest)
    by_loss = alternatives_rows(traded.search_result, None, sort="loss")
    assert [r["index"] for r in by_loss] == [1, 0]
    assert [
        r["index"]
        for r in alternatives_rows(traded.search_result, None, sort="loss", descending=True)
    ] == [0, 1]
    assert [r["index"] for r in alternatives_rows(traded.search_result, None, sort="max_risk")] == [
        0,
        1,
    ]


def test_the_step_7_table_sorts_and_offers_the_comparison(traded, analyst, custodian, client_for):
    url = reverse(
        "assessment-step",
        kwargs={"org": custodian.slug, "assessment_id": traded.id, "slug": "deidentify"},
    )
    page = client_for(analyst).get(url, {"sort": "loss", "dir": "desc"}).content.decode()
    order = re.findall(r'data-testid="alternative-(\d+)"', page)
    assert order == ["0", "1"]
    page = client_for(analyst).get(url, {"sort": "loss"}).content.decode()
    assert re.findall(r'data-testid="alternative-(\d+)"', page) == ["1", "0"]
    assert 'aria-sort="ascending"' in page
    assert "<strong>Optimum:</strong>" in page
    assert "12 (3.0%)" in page
    assert 'data-testid="compare"' in page


def test_two_alternatives_side_by_side(traded, analyst, custodian, client_for):
    frame = trade_off_people()
    comparison = alternatives_compare(assessment=traded, first=0, second=1)
    kept, banded = comparison["alternatives"]
    assert (kept["suppressed_rows"], banded["suppressed_rows"]) == (0, 12)
    by_column = {v["column"]: v["sides"] for v in comparison["variables"]}
    # Age: everyone is "*" in A; in B five-year bands of the 388 people under 85.
    assert by_column["age"][0]["values"] == [("*", 400)]
    young = frame.filter(pl.col("age").cast(pl.Int64) < 85)
    bands = (
        young.with_columns((pl.col("age").cast(pl.Int64) // 5 * 5).alias("low"))
        .group_by("low")
        .len()
        .sort(["len", "low"], descending=[True, False])
    )
    assert [n for _, n in by_column["age"][1]["values"] if n] == bands.get_column("len").to_list()
    assert by_column["age"][1]["groups"] == bands.height
    # Sex is kept in both; B lost the 12 suppressed records.
    sexes = dict(frame.get_column("sex").value_counts().iter_rows())
    assert dict(by_column["sex"][0]["values"]) == sexes
    old_sexes = dict(
        frame.filter(pl.col("age").cast(pl.Int64) >= 85)
        .get_column("sex")
        .value_counts()
        .iter_rows()
    )
    assert dict(by_column["sex"][1]["values"]) == {s: sexes[s] - old_sexes.get(s, 0) for s in sexes}

    url = reverse("assessment-compare", kwargs={"org": custodian.slug, "assessment_id": traded.id})
    page = client_for(analyst).get(f"{url}?pick=0&pick=1").content.decode()
    assert "0 of 400 (0.0%)" in page and "12 of 400 (3.0%)" in page
    assert page.count("<svg") == 4  # age and sex, A and B
    refused = client_for(analyst).get(f"{url}?pick=0")
    assert refused.status_code == 400
    assert "exactly two" in refused.content.decode()
    with pytest.raises(ApplicationError, match="two different alternatives"):
        alternatives_compare(assessment=traded, first=1, second=1)
