"""Step 7 guidance before a search: lattice size, time estimate, and a warning — before
running — when no solution can exist, naming the caps that block it."""

from __future__ import annotations

import polars as pl
import pytest
from django.urls import reverse

from apps.assessments import deidentify
from apps.assessments.models import HierarchySpec
from apps.audit.models import AuditEvent
from tests.reviews.conftest import trade_off_people

pytestmark = pytest.mark.django_db


def precheck(client, assessment) -> str:  # type: ignore[no-untyped-def]
    url = reverse(
        "assessment-search-precheck",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id},
    )
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_warns_before_a_search_that_cannot_succeed(traded, analyst, client_for):
    # Caps: age at level 0 (exact ages) and sex at level 0. The most generalized data within
    # them is the original data: every (age, sex) cell under k = 10 must be suppressed.
    cells = trade_off_people().group_by("age", "sex").agg(pl.len().alias("n"))
    suppressed = int(cells.filter(pl.col("n") < 10)["n"].sum())
    assert suppressed > 20  # more than 5 % of 400
    deidentify.deid_config_set(
        assessment=traded,
        masking={},
        suppression_limit=0.05,
        metric="loss",
        max_levels={"age": 0, "sex": 0},
    )
    events = AuditEvent.objects.count()
    client = client_for(analyst)
    body = precheck(client, traded)
    assert 'data-testid="infeasible"' in body
    assert (
        "With age capped at level 0 of 4, sex capped at level 0 of 1, no solution exists: even "
        f"the most generalized data suppresses {suppressed} records "
        f"({suppressed / 400 * 100:.1f} %), more than the 5.0 % allowed (20 records)."
    ) in body
    assert "To find one, lift the cap on age or on sex" in body
    assert (
        "a lattice of <strong>1</strong> combinations of generalization levels (10 without" in body
    )
    assert 'data-testid="estimated-time"' in body
    # Reading it changed nothing: no hierarchy saved anew, no event besides the sign-in.
    assert AuditEvent.objects.count() == events + 1
    assert HierarchySpec.objects.filter(assessment=traded).count() == 2

    # Without caps a solution exists, as the search then finds.
    deidentify.deid_config_set(
        assessment=traded, masking={}, suppression_limit=0.05, metric="loss", max_levels={}
    )
    body = precheck(client, traded)
    assert 'data-testid="feasible"' in body and "a solution exists" in body


def test_the_precheck_judges_the_privacy_models_the_search_enforces(custodian, analyst, client_for):
    # Diagnosis follows sex: every woman has asthma, every man diabetes. With sex kept
    # (capped at level 0 of 1) and age fully generalized, k = 10 is met by two groups of
    # about 200, but both are homogeneous on diagnosis: distinct 2-diversity suppresses
    # all 400 records. Distinct l-diversity is monotone, so that proves no node passes.
    from tests.assessments.conftest import _run, through_risk, uploaded_register

    frame = trade_off_people().with_columns(
        pl.when(pl.col("sex") == "F")
        .then(pl.lit("J45 Asthma"))
        .otherwise(pl.lit("E11 Diabetes"))
        .alias("diagnosis")
    )
    dataset = uploaded_register(custodian, analyst, frame)
    from apps.classification.services import variables_accept_suggestions

    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = through_risk(custodian, analyst, dataset)
    from apps.assessments.hierarchies import hierarchies_ensure

    hierarchies_ensure(assessment=assessment)  # (the defaults, saved as a search saves them)

    def settings(models):  # type: ignore[no-untyped-def]
        deidentify.deid_config_set(
            assessment=assessment,
            masking={},
            suppression_limit=0.05,
            metric="loss",
            max_levels={"sex": 0},
            privacy_models=models,
        )

    client = client_for(analyst)
    settings([])
    body = precheck(client, assessment)  # (k alone: met, and this answer is cached)
    assert 'data-testid="feasible"' in body and "a solution exists" in body

    settings([{"column": "diagnosis", "spec": "distinct-l=2"}])
    body = precheck(client, assessment)
    assert 'data-testid="feasible"' not in body and "a solution exists" not in body
    assert 'data-testid="infeasible"' in body
    assert (
        "With sex capped at level 0 of 1, no solution exists: even the most generalized data "
        "suppresses 400 records (100.0 %) (groups too small for the target, or failing the "
        "privacy model: distinct l-diversity, l = 2 on diagnosis), more than the 5.0 % "
        "allowed (20 records)."
    ) in " ".join(body.split())
    assert "lift the cap on sex" in body

    # ... and the search agrees: no solution.
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.search_result["solution"] is None

    # Without the cap, sex may be generalized, mixing both diagnoses: both find a solution.
    deidentify.deid_config_set(
        assessment=assessment,
        masking={},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
        privacy_models=[{"column": "diagnosis", "spec": "distinct-l=2"}],
    )
    body = precheck(client, assessment)
    assert 'data-testid="feasible"' in body
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.search_result["solution"] is not None
