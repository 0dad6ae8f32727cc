"""What leaves in a release besides the quasi-identifiers (#22 item 3, #23 items 1 and 8).

A column left as "other" used to leave verbatim and unmeasured: on a public extract of
traffic-fatality records, an Hispanic-origin column whose "not a fatality" value came
exactly with the sensitive injury gave 68 unique records and 283 classes homogeneous on the
injury, while Step 8 and the report said "0 homogeneous classes". And character masking kept
1,000 leading characters of full names and notes: every name minus its last letter left, and
nothing blocked. The data here are generated for these tests, with neutral column names."""

from __future__ import annotations

import json
import random
from collections import Counter

import polars as pl
import pytest
from django.urls import reverse

from apps.assessments import deidentify, release_apply, services
from apps.assessments.models import Assessment
from apps.assessments.release_columns import (
    column_findings,
    columns_reviewed_set,
    masking_kept,
    masking_kept_query,
)
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.namelists import FIRST_NAMES, LAST_NAMES
from apps.jobs.claiming import job_execute
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit, submission_blockers
from tests.assessments.conftest import WAIVER, _run, through_risk, uploaded_register
from tests.justify import justify_all
from tests.streaming_plan import in_memory_fallbacks

pytestmark = pytest.mark.django_db


def crashes(n: int = 1500, seed: int = 11) -> pl.DataFrame:
    """Crash records: the injury is sensitive; "origin" is "Not a fatality (N/A)" exactly
    for the records whose injury is not fatal (as the public extract's Hispanic-origin
    column was), one of three origins otherwise, one of them rare; "source" is the same for
    everyone."""
    rng = random.Random(seed)
    rows: dict[str, list[str]] = {k: [] for k in ("years", "gender", "injury", "origin", "source")}
    for _ in range(n):
        fatal = rng.random() < 0.35
        rows["years"].append(str(rng.randrange(16, 90)))
        rows["gender"].append(rng.choice(["Male", "Female"]))
        rows["injury"].append("Fatal" if fatal else "Not fatal")
        rows["origin"].append(
            rng.choices(["Hispanic", "Not Hispanic", "Unknown origin"], [30, 69, 1])[0]
            if fatal
            else "Not a fatality (N/A)"
        )
        rows["source"].append("State register 2019")
    return pl.DataFrame(rows)


def _classify(dataset, analyst, roles: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    variables = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(variables[c].id), role, f"Set for this test: {c} is {role}.")
            for c, role in roles.items()
        ],
    )


def _applied(custodian, analyst, dataset, masking=None):  # type: ignore[no-untyped-def]
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


def _step(client, assessment, slug: str) -> str:  # type: ignore[no-untyped-def]
    return client.get(
        reverse(
            "assessment-step",
            kwargs={
                "org": assessment.organization.slug,
                "assessment_id": assessment.id,
                "slug": slug,
            },
        )
    ).content.decode()


def test_an_other_column_that_predicts_the_sensitive_variable_blocks_the_submission(
    custodian, analyst, reviewer, client_for
):
    frame = crashes()
    dataset = uploaded_register(custodian, analyst, frame)
    _classify(
        dataset,
        analyst,
        {"years": "quasi", "gender": "quasi", "injury": "sensitive", "origin": "other",
         "source": "other"},
    )  # fmt: skip
    assessment = _applied(custodian, analyst, dataset)
    measured = assessment.apply_result["released_columns"]
    assert measured["measured"] == ["origin", "source"]
    assert measured["release_size"] == 10  # public, threshold 0.1

    # The same figures, counted here with plain group-bys of the released file.
    released = _released(assessment)
    quasi = ["years", "gender"]
    with_origin = released.group_by([*quasi, "origin"]).agg(
        pl.len().alias("n"), pl.col("injury").n_unique().alias("l")
    )
    homogeneous = with_origin.filter((pl.col("l") == 1) & (pl.col("n") > 1))
    without = released.group_by(quasi).agg(
        pl.len().alias("n"), pl.col("injury").n_unique().alias("l")
    )
    assert without.get_column("n").min() >= 10  # the release itself meets k = 10
    origin, source = measured["columns"]
    assert origin["with_column"]["uniques"] == int((with_origin.get_column("n") == 1).sum())
    assert origin["with_column"]["classes"] == with_origin.height
    (link,) = origin["links"]
    assert (link["classes"], link["records"]) == (
        homogeneous.height,
        int(homogeneous.get_column("n").sum()),
    )
    assert link["classes_without"] == without.filter(pl.col("l") == 1).height == 0
    # Every (quasi-identifiers, N/A) class of two records or more is all "Not fatal".
    not_applicable = with_origin.filter(
        (pl.col("origin") == "Not a fatality (N/A)") & (pl.col("n") > 1)
    )
    assert not_applicable.height > 0 and not_applicable.get_column("l").max() == 1
    rare = int((released.get_column("origin") == "Unknown origin").sum())
    assert 0 < rare < 10 and origin["small_values"] == 1 and origin["small_records"] == rare
    assert source["small_values"] == 0 and source["with_column"] == measured["without"]

    (finding,) = column_findings(assessment.apply_result, assessment.deid)
    assert finding["column"] == "origin"
    assert finding["kinds"] == ["small_cells", "uniques", "risk", "predicts:injury"]
    assert not finding["hard"] and finding["reviewed"] == ""
    (blocker,) = submission_blockers(assessment)
    assert blocker.startswith("Column 'origin' (other) is released as it is")
    assert f"{homogeneous.height} classes of 2 or more records" in blocker
    with pytest.raises(ApplicationError) as refused:
        assessment_submit(
            assessment=assessment, user=analyst, note="Please review.", intruder_waiver=WAIVER
        )
    assert refused.value.status == 409 and "'origin'" in refused.value.message

    # Step 8 measures l-diversity with the released columns as well.
    utility = _step(client_for(analyst), assessment, "utility")
    assert 'data-testid="diversity-with-columns"' in utility
    (diversity,) = measured["diversity_with_all"]
    assert diversity["smallest_l"] == 1
    assert diversity["homogeneous_shared_classes"] == homogeneous.height
    # Step 7 shows the finding with a place to explain it.
    step7 = _step(client_for(analyst), assessment, "deidentify")
    assert 'data-testid="column-finding-origin"' in step7
    assert 'data-testid="review-column-origin"' in step7

    # Explaining it: not the reviewer; not six tokens; not a sentence that names nothing.
    url = f"/api/v1/assessments/{assessment.id}/deidentify/columns/"
    listed = client_for(analyst).get(url).json()
    assert [(f["column"], f["hard"], f["reviewed"]) for f in listed] == [("origin", False, "")]
    assert [g[0] for g in listed[0]["grounds"]] == ["not_knowable"]
    body = {"column": "origin", "reason": "x x x x x x"}
    assert client_for(reviewer).post(url, body, "application/json").status_code == 403
    for reason in ("x x x x x x", "The analysts need this column for their work.",
                   "These origin values are rare and make unique records."):  # fmt: skip
        answer = client_for(analyst).post(
            url, {"column": "origin", "reason": reason}, "application/json"
        )
        assert answer.status_code == 400, reason
    assert "what it predicts of injury" in answer.json()["message"]  # named the rest only
    assert submission_blockers(assessment)
    # A sentence naming both, through the page.
    response = client_for(analyst).post(
        reverse(
            "assessment-step",
            kwargs={"org": custodian.slug, "assessment_id": assessment.id, "slug": "deidentify"},
        ),
        {
            "action": "columns_reviewed",
            "column": "origin",
            "reason": "Origin is recorded only by the coroner: its rare values and the classes "
            "homogeneous on injury cannot be matched by anyone outside.",
        },
        follow=True,
    )
    assert "is recorded" in " ".join(str(m) for m in response.context["messages"])
    assessment.refresh_from_db()
    assert submission_blockers(assessment) == []
    assessment_submit(
        assessment=assessment, user=analyst, note="Please review.", intruder_waiver=WAIVER
    )
    review = client_for(reviewer).get(
        reverse("assessment-review", kwargs={"org": custodian.slug, "assessment_id": assessment.id})
    )
    page = review.content.decode()
    assert 'data-testid="column-finding-origin"' in page
    assert "Origin is recorded only by the coroner" in page
    assert 'data-testid="review-column-origin"' not in page  # no form for the reviewer
    assert 'data-testid="review-diversity-with-columns"' in page

    # The signed report lists the finding, the explanation and l-diversity with the columns.
    from apps.reports.content import report_html

    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Explained."
    )
    report = report_html(assessment=assessment, decision=decision)
    assert 'data-testid="report-column-findings"' in report
    assert "Origin is recorded only by the coroner" in report
    assert 'data-testid="attribute-disclosure-with-columns"' in report


def test_a_new_finding_after_the_explanation_blocks_again(custodian, analyst):
    """An explanation answers the findings it was given for: written again with a column
    that now also predicts the sensitive variable, the release is blocked again."""
    frame = crashes(seed=4)
    dataset = uploaded_register(custodian, analyst, frame)
    _classify(
        dataset,
        analyst,
        {"years": "quasi", "gender": "quasi", "injury": "sensitive", "origin": "other",
         "source": "other"},
    )  # fmt: skip
    assessment = _applied(custodian, analyst, dataset)
    config = dict(assessment.deid_config)
    # An explanation recorded for small cells only (as if the column had had no other finding).
    config["columns_reviewed"] = {
        "origin": {"reason": "rare values only", "ground": "not_knowable", "by": "someone",
                   "kinds": ["small_cells"]},
    }  # fmt: skip
    Assessment.objects.filter(id=assessment.id).update(deid_config=config)
    assessment.refresh_from_db()
    assert [b[:16] for b in submission_blockers(assessment)] == ["Column 'origin' "]
    columns_reviewed_set(
        assessment=assessment, user=analyst, column="origin", reason="", ground="not_knowable"
    )
    assessment.refresh_from_db()
    assert submission_blockers(assessment) == []


# --------------------------------------------------------------------------- masking (#23)


def patients(n: int = 400, seed: int = 8) -> pl.DataFrame:
    """Patients with a full name ("Patient First Last"), an Ottawa phone number, a free-text
    note naming them and a badge number no detector knows, besides age, sex and a
    diagnosis."""
    rng = random.Random(seed)
    rows: dict[str, list[str]] = {
        k: [] for k in ("full_name", "phone", "notes", "badge", "age", "sex", "diagnosis")
    }
    for _ in range(n):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        phone = f"613-{rng.randrange(200, 999)}-{rng.randrange(0, 10000):04d}"
        diagnosis = rng.choice(["Asthma", "Diabetes", "Hypertension"])
        rows["full_name"].append(f"Patient {first} {last}")
        rows["phone"].append(phone)
        rows["notes"].append(
            f"Patient {first} {last} called from {phone} about {diagnosis.lower()}; "
            f"follow-up booked with Dr. {rng.choice(LAST_NAMES)} next week."
        )
        rows["badge"].append(f"Badge {rng.randrange(100, 1000)}")
        rows["age"].append(str(rng.randrange(20, 80)))
        rows["sex"].append(rng.choice("FM"))
        rows["diagnosis"].append(diagnosis)
    return pl.DataFrame(rows)


@pytest.fixture
def masked_ready(custodian, analyst):  # type: ignore[no-untyped-def]
    """Steps 1-6 done on `patients`, the name, phone and notes direct identifiers."""
    dataset = uploaded_register(custodian, analyst, patients())
    _classify(
        dataset,
        analyst,
        {"full_name": "direct", "phone": "direct", "notes": "direct", "badge": "direct",
         "age": "quasi", "sex": "quasi", "diagnosis": "sensitive"},
    )  # fmt: skip
    return through_risk(custodian, analyst, dataset)


def test_masking_that_keeps_the_value_is_refused_by_the_page_the_api_and_the_job(
    masked_ready, analyst, client_for
):
    assessment = masked_ready
    step7 = reverse(
        "assessment-step",
        kwargs={
            "org": assessment.organization.slug,
            "assessment_id": assessment.id,
            "slug": "deidentify",
        },
    )
    page = client_for(analyst)
    for column, fragment in (("full_name", "keeps at most half of a value"),
                             ("notes", "is free text")):  # fmt: skip
        shown = page.post(
            step7,
            {"action": "config", f"mask-{column}": "mask", f"lead-{column}": "1000",
             "suppression_limit": "5"},
            follow=True,
        )  # fmt: skip
        messages = " ".join(str(m) for m in shown.context["messages"])
        assert fragment in messages and f"'{column}'" in messages, messages
    assessment.refresh_from_db()
    assert (assessment.deid_config or {}).get("masking", {}) == {}

    api = f"/api/v1/assessments/{assessment.id}/deidentify/config/"
    for column in ("full_name", "notes"):
        answer = page.put(
            api,
            json.dumps({"masking": {column: {"method": "mask", "keep_leading": 1000}}}),
            content_type="application/json",
        )
        assert answer.status_code == 400 and f"'{column}'" in answer.json()["message"]

    # A setting stored before the rule (or written around the service) is refused by the job.
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    Assessment.objects.filter(id=assessment.id).update(
        deid_config={"masking": {"full_name": {"method": "mask", "keep_leading": 1000}}}
    )
    assessment.refresh_from_db()
    job = release_apply.assessment_start_apply(assessment=assessment, user=analyst)
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "failed"
    assert "'full_name'" in job.error and "at most half of a value" in job.error
    assessment.refresh_from_db()
    assert assessment.apply_result is None and not assessment.output_parquet_path


def test_masked_values_that_single_people_out_block_and_cannot_be_explained(
    masked_ready, analyst, client_for
):
    """Nine leading characters of "Patient First Last" (under half of it) keep the first
    letter of the given name: with age and sex, records stand alone. The masked column is
    measured and re-scanned like any released column; no explanation lifts the block."""
    assessment = masked_ready
    config = deidentify.deid_config(assessment).to_json()
    deidentify.deid_config_set(
        assessment=assessment,
        masking={**config["masking"], "full_name": {"method": "mask", "keep_leading": 9}},
        suppression_limit=config["suppression_limit"],
        metric=config["metric"],
        max_levels=config["max_levels"],
    )
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    released = _released(assessment).get_column("full_name").to_list()
    originals = patients().get_column("full_name").to_list()
    # 9 leading characters, or half of a shorter name: "Patient Al Li" keeps "Patie".
    kept = [min(9, len(n) // 2) for n in originals]
    expected = Counter(n[:k] + "*" * (len(n) - k) for n, k in zip(originals, kept, strict=True))
    assert not Counter(released) - expected  # every released value is one of these
    assert len(released) >= 0.95 * len(originals)
    # Re-scanned like any released text column (a masked one is no longer skipped).
    scanned = [e["column"] for e in assessment.apply_result["identifier_scan"]]
    assert "full_name" in scanned
    measured = {c["column"]: c for c in assessment.apply_result["released_columns"]["columns"]}
    assert list(measured) == ["full_name"]
    entry = measured["full_name"]
    assert entry["kept"] == {
        "keep_leading": 9, "keep_trailing": 0, "most_kept": 9,
        "mean_share": pytest.approx(
            sum(k / len(n) for n, k in zip(originals, kept, strict=True)) / len(originals)
        ),
    }  # fmt: skip
    frame = _released(assessment)
    sizes = frame.group_by(["age", "sex", "full_name"]).len().get_column("len")
    assert entry["with_column"]["uniques"] == int((sizes == 1).sum()) > 0

    (finding,) = column_findings(assessment.apply_result, assessment.deid)
    assert finding["hard"] and finding["grounds"] == []
    services.assessment_accept_utility(assessment=assessment, note="Enough for the study.")
    justify_all(assessment)
    assessment.refresh_from_db()
    blockers = submission_blockers(assessment)
    assert any(
        b.startswith("The direct identifier 'full_name' is released character-masked")
        for b in blockers
    )
    with pytest.raises(ApplicationError, match="cannot be explained away"):
        columns_reviewed_set(
            assessment=assessment,
            user=analyst,
            column="full_name",
            reason="",
            ground="not_knowable",
        )
    answer = client_for(analyst).post(
        f"/api/v1/assessments/{assessment.id}/deidentify/columns/",
        {"column": "full_name", "reason": "The names are initials only and few people share them."},
        "application/json",
    )
    assert answer.status_code == 400 and "cannot be explained away" in answer.json()["message"]
    page = _step(client_for(analyst), assessment, "deidentify")
    assert 'data-testid="hard-full_name"' in page and 'data-testid="kept-full_name"' in page


def test_the_reviewer_sees_what_a_masking_kept(masked_ready, analyst, reviewer, client_for):
    """Three leading characters of Ottawa numbers keep the area code every record shares:
    nothing singles anyone out, the release is submitted, and the reviewer and the report
    read what was kept (not only "character masking")."""
    assessment = masked_ready
    config = deidentify.deid_config(assessment).to_json()
    deidentify.deid_config_set(
        assessment=assessment,
        masking={**config["masking"], "phone": {"method": "mask", "keep_leading": 3}},
        suppression_limit=config["suppression_limit"],
        metric=config["metric"],
        max_levels=config["max_levels"],
    )
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert set(_released(assessment).get_column("phone").to_list()) == {"613*********"}
    services.assessment_accept_utility(assessment=assessment, note="Enough for the study.")
    justify_all(assessment)
    assessment.refresh_from_db()
    assert column_findings(assessment.apply_result, assessment.deid) == []
    assert submission_blockers(assessment) == []
    assessment_submit(
        assessment=assessment, user=analyst, note="Please review.", intruder_waiver=WAIVER
    )
    page = (
        client_for(reviewer)
        .get(
            reverse(
                "assessment-review",
                kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id},
            )
        )
        .content.decode()
    )
    kept = page.split('data-testid="kept-phone"', 1)[1].split("</li>", 1)[0]
    assert "at most 3 characters of a value kept, 25% of its characters on average" in kept
    assert "1 distinct masked value;" in kept
    assert "“613*********” (" in kept
    from apps.reports.content import report_html

    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Fine."
    )
    report = report_html(assessment=assessment, decision=decision)
    assert "at most 3 characters of a value were kept, 25 % of its characters on average" in report


def test_what_a_masking_kept_is_one_streaming_aggregate() -> None:
    original = pl.DataFrame({"code": ["abc", "abcdef", None, ""] * 50}).lazy()
    spec = {"code": {"method": "mask", "keep_leading": 3}}
    assert in_memory_fallbacks(masking_kept_query(original, spec)) == []
    # "abc" keeps 1 of 3 (half, rounded down), "abcdef" 3 of 6; the empty value is left out.
    kept = masking_kept(original, {**spec, "other": {"method": "remove"}})
    assert kept == {
        "code": {"keep_leading": 3, "keep_trailing": 0, "most_kept": 3,
                 "mean_share": pytest.approx((1 / 3 + 3 / 6) / 2)},
    }  # fmt: skip


def test_a_scrubbed_column_that_is_not_free_text_is_measured(masked_ready, analyst):
    """Scrubbing replaces what the detectors recognize; in a code column they recognize
    nothing, so the values leave as they were. Free text is re-scanned instead; any other
    scrubbed column is measured like the rest."""
    assessment = masked_ready
    config = deidentify.deid_config(assessment).to_json()
    deidentify.deid_config_set(
        assessment=assessment,
        masking={**config["masking"], "badge": {"method": "scrub"}, "notes": {"method": "scrub"}},
        suppression_limit=config["suppression_limit"],
        metric=config["metric"],
        max_levels=config["max_levels"],
    )
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    released = _released(assessment)
    assert set(released.get_column("badge").to_list()) <= set(patients().get_column("badge"))
    assert assessment.apply_result["released_columns"]["measured"] == ["badge"]
    (finding,) = column_findings(assessment.apply_result, assessment.deid)
    assert finding["column"] == "badge" and finding["role_words"] == "direct identifier"
    assert "uniques" in finding["kinds"] and finding["hard"]
    sizes = released.group_by(["age", "sex", "badge"]).len().get_column("len")
    assert f"leaves {int((sizes == 1).sum()):,} records alone" in finding["in_words"]
    services.assessment_accept_utility(assessment=assessment, note="Enough for the study.")
    justify_all(assessment)
    assessment.refresh_from_db()
    (blocker,) = submission_blockers(assessment)
    assert blocker.startswith("The direct identifier 'badge' is released scrubbed")
