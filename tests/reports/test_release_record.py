"""The release record of issue 28 in the signed report and the frozen record: the threshold
profile with its source (and, below, the threat model, the attack tests and the
motivated-intruder log)."""

from __future__ import annotations

import html
import io
import re

from pypdf import PdfReader

from apps.reports.content import report_html
from apps.reports.verification import report_pdf
from apps.reviews.models import AssessmentSnapshot


def _text(pdf: bytes) -> str:
    return " ".join(
        " ".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(pdf)).pages).split()
    )


def _html_text(decision) -> str:  # type: ignore[no-untyped-def]
    page = report_html(assessment=decision.assessment, decision=decision)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_profile_its_values_and_source_are_frozen_and_printed(report, decided):
    snapshot = AssessmentSnapshot.objects.get(assessment=decided.assessment)
    frozen = snapshot.content["assessment"]["threshold_result"]
    detail = frozen["profile_detail"]
    assert (detail["key"], detail["release_model"], detail["measure"]) == (
        "ontario_ipc_2016",
        "non_public",
        "strict_average",
    )
    assert detail["values"] == {"low": 0.1, "medium": 0.075, "high": 0.05}
    text = _text(report_pdf(report))
    assert "Profile's values for a non-public release low 0.1, medium 0.075, high 0.05" in text
    assert "bounding the strict average risk" in text
    # The profile's source document, as frozen, not as the profile file may read later.
    assert detail["source"].split(",")[0] in text
    assert detail["source"][:60] in _html_text(decided)


def test_the_threat_model_is_frozen_and_printed(report, decided):
    snapshot = AssessmentSnapshot.objects.get(assessment=decided.assessment)
    threat = snapshot.content["threat_model"]
    assert threat["recipients"] == ["University Hospital Research Unit"]
    assert (threat["known_columns"], threat["target_in_sample"]) == (["age", "sex"], "known")
    text = _text(report_pdf(report))
    assert "Threat model" in text
    assert "Recipients University Hospital Research Unit" in text
    assert "Columns the adversary knows age, sex (the quasi-identifiers of Step 2" in text
    assert "knows the person they look for is in the data (prosecutor risk)" in text


def test_the_attack_tests_are_printed_with_seed_and_method_version(report, decided):
    snapshot = AssessmentSnapshot.objects.get(assessment=decided.assessment)
    attacks = snapshot.content["assessment"]["apply_result"]["attacks"]
    assert attacks["status"] == "done" and attacks["targets"] == 5  # 10 records: 5 and 5
    text = _text(report_pdf(report))
    assert "Attack tests on the release" in text
    assert f"method version {attacks['method_version']}, seed {attacks['seed']}" in text
    assert "Linkability (exact match)" in text and "Inference of diagnosis" in text


def test_a_public_release_without_an_intruder_test_prints_the_reason(assessment, analyst, reviewer):
    from apps.reviews.decisions import review_decide
    from apps.reviews.submissions import assessment_submit
    from tests.reports.helpers import compute

    reason = "The release holds only counts by region, already published by the ministry."
    compute(assessment, analyst, release_model="public")
    assessment_submit(assessment=assessment, user=analyst, note="Ready.", intruder_waiver=reason)
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Fine."
    )
    text = _html_text(decision)
    assert "No motivated-intruder test is recorded; one is expected for a public release" in text
    assert f"Submitted without a motivated-intruder test, because: {reason}" in text
