"""Step 7 on a data set uploaded as a person table and an event table (issue 25): the
search and the release's re-measure count persons and events as Step 4 does — a person
without events has no event, not one empty event (figures by hand)."""

from __future__ import annotations

import base64
import json

import polars as pl
import pytest

from apps.assessments import deidentify, release_apply, release_secrets
from apps.assessments.longitudinal_search import person_inputs
from apps.datasets.storage import local_path
from apps.engine.masking import hmac_pseudonym
from tests.assessments.conftest import _run
from tests.assessments.persons_factory import persons_measured
from tests.datasets.test_table_upload import VISITS, _assessment, _uploaded

# PERSONS/VISITS: five persons, person 4 without events. Visits in the long table's order:
# 1 J45, 1 E11, 1 J45, 2 I10, 3 I10, 3 J45, 5 J45; then person 4's row (no event).
LONG_ORDER = ["1", "1", "1", "2", "3", "3", "5", "4"]


def _prepared(custodian, analyst):  # type: ignore[no-untyped-def]
    """Steps 1–6: public, max risk 0.5 (k = 2), p = 1, no suppression allowed; sex, birth
    year and diagnosis kept or suppressed (two levels each)."""
    dataset, _ = _uploaded(custodian, analyst, {"visits.csv": VISITS})
    assessment = _assessment(custodian, analyst, dataset)
    persons_measured(assessment, analyst, "1", ("sex", "birth_year", "diagnosis"))
    config = deidentify.deid_config(assessment).replace(
        suppression_limit=0.0, event_suppression_limit=0.0
    )
    deidentify.deid_config_save(assessment=assessment, config=config)
    assessment.refresh_from_db()
    return assessment


def test_step7_counts_a_person_without_events_as_step4_does(custodian, analyst):
    assessment = _prepared(custodian, analyst)
    step4 = assessment.risk_result
    assert step4 is not None
    assert (step4["persons"], step4["events"], step4["rows"]) == (5, 7, 8)
    assert step4["persons_without_events"] == 1

    # Step 7 reads the same persons and events: per person (ids 1…5) 3, 1, 2, 0, 1.
    inputs = person_inputs(assessment)
    assert inputs.problem.data.ids.to_list() == ["1", "2", "3", "4", "5"]
    assert inputs.problem.data.events_per_person().tolist() == [3, 1, 2, 0, 1]
    assert (inputs.problem.persons, inputs.problem.events) == (5, 7)

    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    search = assessment.search_result
    assert (search["persons"], search["events"]) == (5, 7)
    # p = 1, k = 2, nothing may be suppressed. Sex and birth year kept: person 1 is alone
    # in (F, 1970). Birth year at *: F {1, 4, 5}, M {2, 3}; diagnosis kept, E11 is person
    # 1's alone; diagnosis at *: persons 1 and 5 hold *, 2 and 3 hold * → counts 2, and
    # person 4, without events, is matched by the three of F → 3. The optimum.
    # (Were person 4's empty row an event, its empty diagnosis would be held by 4 alone.)
    assert search["levels"] == {"sex": 0, "birth_year": 1, "diagnosis": 1}
    solution = search["solution"]
    assert (solution["suppressed_persons"], solution["suppressed_events"]) == (0, 0)
    assert solution["min_class_size"] == 2
    assert solution["max_risk"] == pytest.approx(0.5)

    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    result = assessment.apply_result
    with local_path(assessment.output_parquet_path) as path:
        released = pl.read_parquet(path)
    lg = result["longitudinal"]
    # Re-measured as Step 4 counts: 5 persons, 7 events (person 4's row is no event).
    assert (lg["persons_in"], lg["events_in"], lg["persons_out"], lg["events_out"]) == (
        5,
        7,
        5,
        7,
    )
    after = lg["risk_after"]
    # Counts 2, 2, 2, 3, 2 → min 2, max ½, average (4 · ½ + ⅓) / 5 = 7/15.
    assert after["min_class_size"] == 2
    assert after["max_risk"] == pytest.approx(0.5)
    assert after["average_risk"] == pytest.approx(7 / 15)
    assert after["persons_at_risk"] == 0
    assert result["passes"] is True
    # Step 4 on the original (p = 1): 1 alone, 3 (J45 in M) and 5 (J45 in (F,1990)) at
    # 1, persons 2 and 4 at 2 → max 1, average 0.8.
    assert result["risk_before"]["max_risk"] == pytest.approx(1.0)
    assert result["risk_before"]["average_risk"] == pytest.approx(0.8)
    # Events per person before: 3, 1, 2, 0, 1; after the same (nothing suppressed).
    counts = lg["event_counts"]
    top = counts["top_code"]
    assert top == 3  # the 95th percentile of 0, 1, 1, 2, 3
    assert counts["before"] == [
        {"events": "0", "persons": 1},
        {"events": "1", "persons": 2},
        {"events": "2", "persons": 1},
        {"events": "3+", "persons": 1},
    ]
    assert counts["after"] == counts["before"]
    assert lg["suppressed"]["persons_every_event_suppressed"] == 0

    # The long table released: the 7 visits then person 4's row, generalized, the key
    # as its HMAC-SHA-256 pseudonym under the sealed key.
    keys = json.loads(release_secrets.release_secrets_read(assessment=assessment))["keys"]
    key = base64.b64decode(keys["patient_id"])
    assert released.get_column("patient_id").to_list() == [
        hmac_pseudonym(i, key, 32) for i in LONG_ORDER
    ]
    assert released.get_column("sex").to_list() == ["F", "F", "F", "M", "M", "M", "F", "F"]
    assert set(released.get_column("birth_year").to_list()) == {"*"}
    assert released.get_column("diagnosis").to_list() == ["*"] * 7 + [None]
