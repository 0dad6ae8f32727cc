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
