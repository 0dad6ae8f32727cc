"""Step 7's privacy models on sensitive variables (#17 part 2, the wizard), on the ``traded``
register: 400 people, diagnosis among three values. Without a model the optimum bands age by
five years; five-year bands leave one group (men in their forties, 42 records) whose
diagnoses are 0.1187 away from the whole register's (equal-distance EMD, computed below), so
t-closeness with t = 0.1 needs ten-year bands."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from django.conf import settings

from apps.assessments import deidentify, release_apply
from apps.core.errors import ApplicationError
from tests.assessments.conftest import _run, trade_off_people

pytestmark = pytest.mark.django_db


def _set(assessment, models):  # type: ignore[no-untyped-def]
    config = deidentify.deid_config(assessment).to_json()
    deidentify.deid_config_set(
        assessment=assessment,
        masking=config["masking"],
        suppression_limit=config["suppression_limit"],
        metric=config["metric"],
        max_levels=config["max_levels"],
        privacy_models=models,
    )


def _distance(group: pl.DataFrame, overall: dict[str, float]) -> float:
    """Equal-distance EMD: half the L1 distance of the two distributions."""
    share = dict(group.get_column("diagnosis").value_counts(normalize=True).iter_rows())
    return 0.5 * sum(abs(share.get(k, 0.0) - v) for k, v in overall.items())


def test_t_closeness_changes_the_optimum_and_every_released_group_meets_it(traded, analyst):
    frame = trade_off_people().with_columns(pl.col("age").cast(pl.Int64))
    overall = dict(frame.get_column("diagnosis").value_counts(normalize=True).iter_rows())
    bands = frame.with_columns((pl.col("age") // 5 * 5).alias("band"))
    worst = max(_distance(g, overall) for _, g in bands.group_by(["band", "sex"]) if g.height >= 10)
    assert worst == pytest.approx(0.1187, abs=1e-4)  # so five-year bands fail t = 0.1

    assert traded.search_result["levels"] == {"age": 1, "sex": 0}
    _set(traded, [{"column": "diagnosis", "spec": "equal-t=0.1"}])
    traded.refresh_from_db()
    assert traded.search_result is None  # a new model drops the last search
    _run(deidentify.assessment_start_search(assessment=traded, user=analyst))
    traded.refresh_from_db()
    search = traded.search_result
    assert search["levels"] == {"age": 2, "sex": 0}
    assert search["solution"]["suppressed_rows"] == 12  # the people aged 85-89
    assert "t-closeness (equal distance), t = 0.1 on diagnosis" in search["criterion"]
    assert search["privacy_models"] == [{"column": "diagnosis", "spec": "equal-t=0.1"}]

    _run(release_apply.assessment_start_apply(assessment=traded, user=analyst))
    traded.refresh_from_db()
    applied = traded.apply_result
    assert applied["passes"] and applied["rows_out"] == 388
    released = pl.read_parquet(Path(settings.MEDIA_ROOT) / traded.output_parquet_path)
    for _, group in released.group_by(["age", "sex"]):
        assert _distance(group, overall) <= 0.1 + 1e-12


def test_distinct_l_diversity_through_the_api_and_the_refusals(traded, analyst, client_for):
    url = f"/api/v1/assessments/{traded.id}/deidentify/config/"
    api = client_for(analyst)
    body = api.get(url).json()
    assert body["privacy_models"] == []
    body["privacy_models"] = [{"column": "diagnosis", "spec": "distinct-l=3"}]
    saved = api.put(url, body, "application/json")
    assert saved.status_code == 200, saved.json()
    assert saved.json()["privacy_models"] == [{"column": "diagnosis", "spec": "distinct-l=3"}]
    # Leaving the field out keeps the model.
    body.pop("privacy_models")
    assert api.put(url, body, "application/json").json()["privacy_models"] == [
        {"column": "diagnosis", "spec": "distinct-l=3"}
    ]
    for models, message in (
        ([{"column": "age", "spec": "distinct-l=2"}], "'age' is not a sensitive variable"),
        ([{"column": "diagnosis", "spec": "ordered-t=0.2"}], "needs numbers"),
        ([{"column": "diagnosis", "spec": "hierarchical-t=0.2"}], "needs a hierarchy"),
        ([{"column": "diagnosis", "spec": "distinct-l=0"}], "Privacy model on 'diagnosis'"),
        ([{"column": "diagnosis", "spec": "nonsense"}], "not understood"),
    ):
        with pytest.raises(ApplicationError, match=message):
            _set(traded, models)
    traded.refresh_from_db()
    assert traded.deid_config["privacy_models"] == [{"column": "diagnosis", "spec": "distinct-l=3"}]


def test_step_7_form_offers_a_model_per_sensitive_variable_with_its_step_4_reason(
    traded, analyst, custodian, client_for
):
    from django.urls import reverse

    url = reverse(
        "assessment-step",
        kwargs={"org": custodian.slug, "assessment_id": traded.id, "slug": "deidentify"},
    )
    client = client_for(analyst)
    page = client.get(url).content.decode()
    assert 'data-testid="privacy-diagnosis"' in page
    finding = [d for d in traded.risk_result["attribute_disclosure"] if d["column"] == "diagnosis"][
        0
    ]
    assert (
        f"smallest number of distinct diagnosis values in a group is {finding['smallest_l']}"
        in page
        or (f"share one value of diagnosis ({finding['homogeneous_shared_rows']} records)" in page)
    )
    response = client.post(
        url,
        {
            "action": "config",
            "mask-email": "remove",
            "suppression_limit": "5",
            "metric": "loss",
            "pm-kind-diagnosis": "recursive-cl",
            "pm-l-diagnosis": "2",
            "pm-c-diagnosis": "3",
            "pm-t-diagnosis": "0.2",
        },
    )
    assert response.status_code == 302
    traded.refresh_from_db()
    assert traded.deid_config["privacy_models"] == [
        {"column": "diagnosis", "spec": "recursive-cl=3,2"}
    ]
    page = client.get(url).content.decode()
    assert 'value="recursive-cl" selected' in page
