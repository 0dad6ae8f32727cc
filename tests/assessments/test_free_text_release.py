"""Free text on the way out (#13): the demo register's notes are a direct identifier by
default and leave the release; scrubbed, they re-scan clean; left in under another role, they
block the submission until removed, scrubbed or explained."""

from __future__ import annotations

import re

import polars as pl
import pytest
from django.urls import reverse

from apps.assessments import deidentify, release_apply, services
from apps.assessments.freetext import identifier_findings, identifiers_reviewed_set
from apps.assessments.models import Assessment
from apps.classification.models import Variable
from apps.classification.services import (
    RoleDecision,
    variables_accept_suggestions,
    variables_classify,
)
from apps.core.errors import ApplicationError
from apps.datasets.demo import generate_register
from apps.datasets.storage import local_path
from apps.engine.namelists import FIRST_NAMES, LAST_NAMES
from apps.reviews.submissions import assessment_submit, submission_blockers
from tests.assessments.conftest import WAIVER, _run, through_risk, uploaded_register
from tests.justify import justify_all

pytestmark = pytest.mark.django_db

ROWS = 600
# Quasi-identifiers kept for a quick search (the others are left out of the release as direct
# identifiers would be); the rest of the suggestions are accepted as is.
KEEP_QUASI = {"age", "sex", "city"}


@pytest.fixture
def register() -> pl.DataFrame:
    return generate_register(ROWS)


def _dataset(custodian, analyst, frame: pl.DataFrame, tmp_path):  # type: ignore[no-untyped-def]
    dataset = uploaded_register(custodian, analyst, frame)
    variables_accept_suggestions(dataset=dataset, user=analyst)
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(v.id), "direct", "Not needed by this analysis: left out.")
            for v in Variable.objects.filter(dataset=dataset, role="quasi").exclude(
                name__in=KEEP_QUASI
            )
        ],
    )
    return dataset


def _through_step_7(custodian, analyst, dataset, masking=None):  # type: ignore[no-untyped-def]
    assessment = through_risk(custodian, analyst, dataset)
    if masking:
        config = deidentify.deid_config(assessment).to_json()
        deidentify.deid_config_set(
            assessment=assessment,
            masking={**config["masking"], **masking},
            suppression_limit=config["suppression_limit"],
            metric=config["metric"],
            max_levels=config["max_levels"],
        )
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.apply_result["passes"]
    services.assessment_accept_utility(assessment=assessment, note="Enough for the study.")
    justify_all(assessment)
    assessment.refresh_from_db()
    return assessment


def _released(assessment: Assessment) -> pl.DataFrame:
    with local_path(assessment.output_parquet_path) as path:
        return pl.read_parquet(path)


def _people_in(released: pl.DataFrame, original: pl.DataFrame) -> list[str]:
    """Names and phones of the register's people, and list names, found in released text."""
    text = [
        str(v)
        for c, dtype in released.schema.items()
        if dtype == pl.String
        for v in released.get_column(c).drop_nulls().to_list()
    ]
    found = []
    full_names = {f"{a} {b}" for a, b in original.select("first_name", "last_name").rows()}
    phones = set(original.get_column("phone").drop_nulls().to_list())
    for value in text:
        found += [n for n in full_names if n in value]
        found += [p for p in phones if p in value]
        words = set(re.findall(r"[^\W\d_]+(?:['-][^\W\d_]+)*", value))
        # Doctors' surnames in the notes ("Dr. Tremblay") come from the lists too.
        if "[NAME]" not in value and ". " in value:
            found += sorted(words & set(FIRST_NAMES + LAST_NAMES))
    return found


def test_accepting_the_suggestions_releases_no_name_or_phone(
    custodian, analyst, register, tmp_path
):
    dataset = _dataset(custodian, analyst, register, tmp_path)
    note = Variable.objects.get(dataset=dataset, name="clinical_note")
    assert (note.role, note.suggestion_kind) == ("direct", "free_text_identifiers")
    assessment = _through_step_7(custodian, analyst, dataset)
    assert assessment.apply_result["masking"]["clinical_note"] == {"method": "remove"}
    released = _released(assessment)
    assert "clinical_note" not in released.columns
    assert _people_in(released, register) == []
    assert identifier_findings(assessment.apply_result, assessment.deid) == []
    assert submission_blockers(assessment) == []


def test_scrubbed_notes_are_released_and_rescan_clean(custodian, analyst, register, tmp_path):
    dataset = _dataset(custodian, analyst, register, tmp_path)
    assessment = _through_step_7(
        custodian, analyst, dataset, masking={"clinical_note": {"method": "scrub"}}
    )
    released = _released(assessment)
    notes = released.get_column("clinical_note").drop_nulls().to_list()
    assert notes and all("[AGE]" in n for n in notes)
    assert _people_in(released, register) == []
    (scrubbed,) = assessment.apply_result["scrubbed"]
    original = register.get_column("clinical_note").drop_nulls().to_list()
    assert scrubbed["column"] == "clinical_note"
    assert scrubbed["spans_after"] == {}
    assert scrubbed["values"] == len(original)
    # Each note with a relative's phone has exactly one; each has its age once.
    assert scrubbed["spans_replaced"]["PHONE"] == sum("can be reached at" in n for n in original)
    assert scrubbed["spans_replaced"]["AGE"] == len(original)
    assert [d["type"] for d in assessment.apply_result["detectors"]][:3] == [
        "EMAIL",
        "URL",
        "DATE",
    ]
    assert submission_blockers(assessment) == []


def test_notes_left_in_as_other_block_the_submission_until_explained(
    custodian, analyst, reviewer, register, tmp_path, client_for
):
    dataset = _dataset(custodian, analyst, register, tmp_path)
    note = Variable.objects.get(dataset=dataset, name="clinical_note")
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[RoleDecision(str(note.id), "other", "The analysts need the notes.")],
    )
    assessment = _through_step_7(custodian, analyst, dataset)
    (finding,) = identifier_findings(assessment.apply_result, assessment.deid)
    assert finding["column"] == "clinical_note"
    assert finding["role"] == "other"
    kept = _released(assessment).get_column("clinical_note").drop_nulls().len()
    assert kept > 0
    assert (finding["values"], finding["rows_with_spans"]) == (kept, kept)  # each states an age
    assert all("[AGE]" in e for e in finding["examples"])
    assert finding["kinds"] == ["AGE", "NAME", "PHONE"]
    blockers = submission_blockers(assessment)
    # Released as it is, each note is its own value: measured as a quasi-identifier would
    # be, it leaves records alone in their class too (apps.assessments.release_columns).
    assert len(blockers) == 2
    assert blockers[0].startswith("Column 'clinical_note' is released with identifiers")
    assert "Step 7" in blockers[0]
    assert blockers[1].startswith("Column 'clinical_note' (other) is released as it is")
    with pytest.raises(ApplicationError) as refused:
        assessment_submit(
            assessment=assessment, user=analyst, note="Please review.", intruder_waiver=WAIVER
        )
    assert refused.value.status == 409
    assert "clinical_note" in refused.value.message

    # The analyst sees it on Step 7, with examples masked and a place to explain.
    step7 = client_for(analyst).get(
        reverse(
            "assessment-step",
            kwargs={"org": custodian.slug, "assessment_id": assessment.id, "slug": "deidentify"},
        )
    )
    page = step7.content.decode()
    assert 'data-testid="finding-clinical_note"' in page
    assert "none: blocks the submission" in page
    assert 'data-testid="review-identifiers-clinical_note"' in page
    assert not any(p in page for p in register.get_column("phone").drop_nulls().to_list())
    # Through the API: a reviewer may not explain it away; a short reason is refused.
    url = f"/api/v1/assessments/{assessment.id}/deidentify/identifiers/"
    api = client_for(reviewer)
    refused_api = api.post(url, {"column": "clinical_note", "reason": "x " * 8}, "application/json")
    assert refused_api.status_code == 403
    listed = client_for(analyst).get(url).json()
    assert [(f["column"], f["reviewed"]) for f in listed] == [("clinical_note", "")]
    short = client_for(analyst).post(
        url, {"column": "clinical_note", "reason": "fine"}, "application/json"
    )
    assert short.status_code == 400
    assert "at least 6 words" in str(short.json())
    # #23: six tokens lifted the block; a reason must name what was found (or be a ground).
    for reason in ("x x x x x x", "These notes are fine for the study's purposes.",
                   "A clinician read every note and the ages are needed."):  # fmt: skip
        refused = client_for(analyst).post(
            url, {"column": "clinical_note", "reason": reason}, "application/json"
        )
        assert refused.status_code == 400, reason
        assert "naming what was found" in refused.json()["message"]
    assert "names, phone numbers" in refused.json()["message"]  # the ones it did not name
    bad_ground = client_for(analyst).post(
        url, {"column": "clinical_note", "reason": "", "ground": "anything"}, "application/json"
    )
    assert bad_ground.status_code == 400
    with pytest.raises(ApplicationError, match="at least 6 words"):
        identifiers_reviewed_set(
            assessment=assessment, user=analyst, column="clinical_note", reason="fine"
        )
    with pytest.raises(ApplicationError, match="Nothing was detected"):
        identifiers_reviewed_set(
            assessment=assessment, user=analyst, column="diagnosis", reason="x " * 8
        )
    assessment.refresh_from_db()
    assert "clinical_note" not in (assessment.deid_config.get("identifiers_reviewed") or {})
    identifiers_reviewed_set(
        assessment=assessment,
        user=analyst,
        column="clinical_note",
        reason="A clinician read every note: the names and phone numbers are the clinic's "
        "staff and lines, and the ages are needed by the study.",
    )
    assessment.refresh_from_db()
    assert [b[:40] for b in submission_blockers(assessment)] == [
        "Column 'clinical_note' (other) is releas"
    ]
    from apps.assessments.release_columns import columns_reviewed_set

    columns_reviewed_set(
        assessment=assessment,
        user=analyst,
        column="clinical_note",
        reason="",
        ground="not_knowable",
    )
    assessment.refresh_from_db()
    assert submission_blockers(assessment) == []
    (finding,) = identifier_findings(assessment.apply_result, assessment.deid)
    assert finding["reviewed"].startswith("A clinician read every note")
    assert finding["reviewed_by"] == analyst.username
    from apps.audit.models import AuditEvent

    assert AuditEvent.objects.filter(action="assessment.identifiers_reviewed").count() == 1
    assert AuditEvent.objects.filter(action="assessment.columns_reviewed").count() == 1
    # Saving the Step 7 settings again keeps the explanation.
    config = deidentify.deid_config(assessment).to_json()
    deidentify.deid_config_set(
        assessment=assessment,
        masking=config["masking"],
        suppression_limit=config["suppression_limit"],
        metric=config["metric"],
        max_levels=config["max_levels"],
    )
    assessment.refresh_from_db()
    assert "clinical_note" in assessment.deid_config["identifiers_reviewed"]
    assert "clinical_note" in assessment.deid_config["columns_reviewed"]
    submission = assessment_submit(
        assessment=assessment, user=analyst, note="Please review.", intruder_waiver=WAIVER
    )
    assert submission.assessment.status == "submitted"
    # The reviewer sees the same finding and the analyst's explanation, not a form.
    review = client_for(reviewer).get(
        reverse("assessment-review", kwargs={"org": custodian.slug, "assessment_id": assessment.id})
    )
    page = review.content.decode()
    assert 'data-testid="finding-clinical_note"' in page
    assert "A clinician read every note" in page
    assert 'data-testid="review-identifiers-clinical_note"' not in page
    assert 'data-testid="column-finding-clinical_note"' in page
    assert "No one outside the custodian can know a person&#x27;s value" in page


def test_category_lists_whose_words_are_names_are_not_read_as_text(custodian, analyst):
    """The free-text detectors read text, not category lists (issue #22): a released list of
    a few words each held by many records — sites or diseases named after people — is not
    "names found" that blocks the submission (the released columns' measure covers what a
    category can expose), while varied sentences naming people still are."""
    import random

    rng = random.Random(1302)
    surnames = sorted(n for n in LAST_NAMES if n.isalpha() and len(n) >= 5)
    firsts = sorted(n for n in FIRST_NAMES if n.isalpha() and len(n) >= 4)
    sites = rng.sample(surnames, 6)
    diseases = [f"{name} disease" for name in rng.sample(surnames, 5)]
    frame = pl.DataFrame(
        {
            "years": [str(rng.randint(20, 69)) for _ in range(ROWS)],
            "gender": [rng.choice("FM") for _ in range(ROWS)],
            "site": [rng.choice(sites) for _ in range(ROWS)],
            "dx": [rng.choice(diseases) for _ in range(ROWS)],
            "remarks": [
                f"Seen with {rng.choice(firsts)} on visit {rng.randint(1, 9999)}, stable."
                for _ in range(ROWS)
            ],
        }
    )
    dataset = uploaded_register(custodian, analyst, frame)
    roles = {"years": "quasi", "gender": "quasi", "site": "other", "dx": "sensitive",
             "remarks": "other"}  # fmt: skip
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(v.id), roles[v.name], f"{v.name}: decided for this release.")
            for v in Variable.objects.filter(dataset=dataset)
        ],
    )
    assessment = _through_step_7(custodian, analyst, dataset)
    flagged = {f["column"] for f in identifier_findings(assessment.apply_result, None)}
    assert flagged == {"remarks"}
    blockers = " ".join(submission_blockers(assessment))
    assert "'site' is released with identifiers" not in blockers
    assert "'dx' is released with identifiers" not in blockers


def _notes_with_record_numbers(frame: pl.DataFrame, seed: int = 2323) -> pl.DataFrame:
    """The register's notes replaced by notes that carry a record number and nothing else a
    detector knew before issue 23: a chart number of 6 digits, a claim number of letters
    and digits, or a medical record number after "MRN"."""
    import random

    rng = random.Random(seed)
    notes = []
    for _ in range(frame.height):
        shape = rng.randrange(3)
        if shape == 0:
            number = f"{rng.randrange(100000, 999999)}"
            notes.append(f"Refill renewed at the clinic, chart {number} updated.")
        elif shape == 1:
            number = f"cl{rng.randrange(10000, 999999)}"
            notes.append(f"Insurer asked about claim {number} again.")
        else:
            notes.append(f"Transferred; MRN {rng.randrange(1000, 99999)} on the form.")
    return frame.with_columns(pl.Series("clinical_note", notes))


def test_record_numbers_left_in_notes_block_the_submission(custodian, analyst, register, tmp_path):
    """Issue 23: notes released with their medical record, chart and claim numbers were
    not found by the re-scan, so nothing blocked the submission."""
    frame = _notes_with_record_numbers(register)
    dataset = _dataset(custodian, analyst, frame, tmp_path)
    note = Variable.objects.get(dataset=dataset, name="clinical_note")
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[RoleDecision(str(note.id), "other", "The analysts need the notes.")],
    )
    assessment = _through_step_7(custodian, analyst, dataset)
    (finding,) = identifier_findings(assessment.apply_result, assessment.deid)
    assert finding["column"] == "clinical_note"
    assert finding["kinds"] == ["ID"]
    kept = _released(assessment).get_column("clinical_note").drop_nulls().len()
    assert kept > ROWS * 0.9
    assert (finding["values"], finding["rows_with_spans"]) == (kept, kept)
    assert finding["spans"] == {"ID": kept}
    assert all("[ID]" in e and not re.search(r"\d{4}", e) for e in finding["examples"])
    blockers = submission_blockers(assessment)
    assert blockers[0].startswith("Column 'clinical_note' is released with identifiers")
    assert "identification numbers" in blockers[0]
    with pytest.raises(ApplicationError) as refused:
        assessment_submit(assessment=assessment, user=analyst, note="Please review.")
    assert refused.value.status == 409


def test_record_numbers_are_scrubbed_from_notes(custodian, analyst, register, tmp_path):
    frame = _notes_with_record_numbers(register)
    dataset = _dataset(custodian, analyst, frame, tmp_path)
    note = Variable.objects.get(dataset=dataset, name="clinical_note")
    if note.role != "direct":
        variables_classify(
            dataset=dataset,
            user=analyst,
            decisions=[RoleDecision(str(note.id), "direct", "Notes carry record numbers.")],
        )
    assessment = _through_step_7(
        custodian, analyst, dataset, masking={"clinical_note": {"method": "scrub"}}
    )
    notes = _released(assessment).get_column("clinical_note").drop_nulls().to_list()
    assert len(notes) > 0
    assert [n for n in notes if re.search(r"\d{4}", n)] == []
    assert all("[ID]" in n for n in notes)
    (scrubbed,) = assessment.apply_result["scrubbed"]
    assert scrubbed["spans_replaced"] == {"ID": ROWS}
    assert scrubbed["spans_after"] == {}
    assert identifier_findings(assessment.apply_result, assessment.deid) == []
