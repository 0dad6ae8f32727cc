"""The recipient summary (issue 28): signed, with a JSON twin whose digest it prints and
carries, checked by the verify page and the API; and none of the internal report's
sections in it."""

from __future__ import annotations

import io
import json
import re

import pytest
from pypdf import PdfReader

from apps.audit.models import AuditEvent
from apps.reports.identity import read_stored
from apps.reports.models import RecipientSummary
from apps.reports.summary import canonical_json
from apps.reports.summary_verification import copy_verify, summary_verify
from apps.reports.verification import report_pdf
from tests.justify import justification_text
from tests.reports.helpers import REASONS, decide, run_report_job

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")

# Sections and content only the internal report holds (templates/reports/step9.html): none
# may reach the recipient.
INTERNAL_ONLY = (
    "Step 2 — Classification of the variables",
    "Step 3 — Risk threshold",
    "Step 4 — Data risk",
    "Step 5 — Context risk",
    "Step 6 — Overall risk",
    "Step 7 — De-identification",
    "7.2 Generalization hierarchies",
    "7.3 Search for the optimal solution",
    "Step 8 — Utility",
    "Per-variable distributions, before and after",
    "Attribute disclosure",
    "Small cells",
    "Assumptions, justifications and overrides",
    "Reviewer comments by step",
    "Review decision and comments",
    "Recipient's privacy and security controls",
    "Recipient's motives and capacity",
    "Motivated-intruder tests",
    "Release registry",
    "About this report",
    "7.5 What was altered, its ISO/IEC 20889 class, and why",
)


def _text(pdf: bytes) -> str:
    return " ".join(
        " ".join(page.extract_text() or "" for page in PdfReader(io.BytesIO(pdf)).pages).split()
    )


@pytest.fixture
def summary(decided, monkeypatch):  # type: ignore[no-untyped-def]
    run_report_job(monkeypatch, decided)
    return RecipientSummary.objects.get(decision=decided)


def _files(summary):  # type: ignore[no-untyped-def]
    return read_stored(summary.pdf_path), read_stored(summary.json_path)


def test_json_twin_verifies_and_a_changed_byte_fails(summary):
    organization = summary.organization
    pdf, twin = _files(summary)
    assert summary.json_sha256 in _text(pdf)  # printed in the signed PDF

    result = copy_verify(organization=organization, pdf=pdf, twin=twin)
    assert result["valid"] is True, result["problem"]
    assert result["recipient_summary"]["json_matches"] is True
    assert result["recipient_summary"]["stored_summary_id"] == str(summary.id)
    assert result["summary"].startswith("Valid: the recipient summary is signed")

    changed = bytearray(twin)
    at = twin.index(b'"records_released":') + len(b'"records_released":')
    changed[at] = ord("9") if changed[at] != ord("9") else ord("8")
    result = copy_verify(organization=organization, pdf=pdf, twin=bytes(changed))
    assert result["valid"] is False
    assert result["recipient_summary"]["json_matches"] is False
    assert result["problem"].startswith("The JSON file does not match the signed summary")
    assert summary.json_sha256 in result["problem"]

    alone = copy_verify(organization=organization, pdf=pdf)  # a summary is recognised alone
    assert alone["valid"] is False and "upload its JSON twin too" in alone["problem"]

    tampered = bytearray(pdf)
    offset = pdf.index(b"stream", 200) + 12
    tampered[offset] ^= 0x01
    broken = summary_verify(organization=organization, pdf=bytes(tampered), twin=twin)
    assert broken["valid"] is False and broken["intact"] is False


def test_twin_is_canonical_json_with_the_threat_model_and_dictionary(summary, decided):
    _pdf, twin = _files(summary)
    data = json.loads(twin)
    assert canonical_json(data) == twin  # sorted keys, no spaces: re-serialising is exact
    assert data["schema"] == "deidweb-recipient-summary/1"
    assert data["threat_model"]["known_columns"] == ["age", "sex"]
    dictionary = {c["column"]: c for c in data["data_dictionary"]}
    assert dictionary["email"]["released"] is False
    assert dictionary["email"]["transformations"][0]["iso_20889_class"] == (
        "Suppression techniques — Masking"
    )
    assert dictionary["email"]["justification"] == justification_text("email")
    assert dictionary["diagnosis"]["transformations"] == []
    assert data["threshold"]["value"] == decided.assessment.threshold_result["value"]
    assert (
        data["threshold"]["profile"]
        == (decided.assessment.threshold_result["profile_detail"]["name"])
    )
    assert data["motivated_intruder_test"] in {"done", "not done"}
    assert [a["reviewer"] for a in data["approvals"]] == ["reviewer"]
    assert data["conditions_of_use"]["agreement_reference"] == "DSA-2026-014"
    assert len(data["attack_tests"]) >= 1


def test_no_internal_report_section_reaches_the_summary(summary, decided):
    from apps.reports.models import Report

    internal = _text(report_pdf(Report.objects.get(decision=decided)))
    recipient = _text(_files(summary)[0])
    for heading in INTERNAL_ONLY:
        assert heading in internal, heading  # the list names real sections of the report
        assert heading not in recipient, heading
    # distinctive internal content: the reviewer's comment and reasons, the submission
    # note, a Step 5 answer's source, hierarchy levels, and any raw e-mail address
    for content in (
        "Low invasion of privacy is consistent with the consent on file.",
        REASONS,
        "Ready for review.",
        "Provincial asthma registry 2025",
        "intervals of 10",
    ):
        assert content in internal, content
        assert content not in recipient, content
    assert not EMAIL.search(recipient)
    # and what the summary is for is there
    for expected in (
        "Data dictionary",
        "ISO/IEC 20889 class",
        justification_text("email"),
        "Threshold and where it comes from",
        "Attack tests",
        "Threat model",
        "Conditions of use",
        "Approvals",
    ):
        assert expected in recipient, expected


def test_only_an_approved_release_has_a_summary(assessment, analyst, reviewer, monkeypatch):
    from tests.reports.helpers import compute

    compute(assessment, analyst)
    decision = decide(assessment, analyst, reviewer, decision="reject")
    run_report_job(monkeypatch, decision)
    assert not RecipientSummary.objects.filter(decision=decision).exists()


def test_everyone_with_access_downloads_both_files_audited(
    summary, analyst, reviewer, outsider, client_for
):
    pdf, twin = _files(summary)
    for user in (analyst, reviewer):
        client = client_for(user)
        got = client.get(f"/api/v1/summaries/{summary.id}/pdf/")
        assert got.status_code == 200 and b"".join(got.streaming_content) == pdf
        got = client.get(f"/api/v1/summaries/{summary.id}/json/")
        assert got.status_code == 200 and b"".join(got.streaming_content) == twin
    assert AuditEvent.objects.filter(action="download.summary_json").count() == 2
    assert client_for(outsider).get(f"/api/v1/summaries/{summary.id}/pdf/").status_code == 404
    listed = client_for(reviewer).get(f"/api/v1/assessments/{summary.assessment_id}/report/")
    assert listed.json()["summaries"][0]["json_sha256"] == summary.json_sha256

    org = summary.organization.slug
    page = client_for(reviewer).get(f"/o/{org}/reports/summaries/{summary.id}/json/")
    assert page.status_code == 200 and b"".join(page.streaming_content) == twin
    verify = client_for(reviewer).post(
        "/api/v1/reports/verify/",
        {
            "organization": org,
            "file": io.BytesIO(pdf),
            "json": io.BytesIO(twin[:-1] + b" "),
        },
    )
    assert verify.status_code == 200
    assert verify.json()["valid"] is False
    assert "does not match the signed summary" in verify.json()["summary"]


def test_internal_report_prints_each_iso_class_and_justification(summary, decided):
    from apps.reports.models import Report

    internal = _text(report_pdf(Report.objects.get(decision=decided)))
    assert "7.5 What was altered, its ISO/IEC 20889 class, and why" in internal
    assert justification_text("email") in internal
    assert "Suppression techniques — Masking" in internal


def test_verify_command_checks_both_files(summary, tmp_path):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    pdf, twin = _files(summary)
    (tmp_path / "s.pdf").write_bytes(pdf)
    (tmp_path / "s.json").write_bytes(twin)
    (tmp_path / "bad.json").write_bytes(twin.replace(b'"schema"', b'"Schema"', 1))
    out = io.StringIO()
    slug = summary.organization.slug
    call_command(
        "verify_report",
        str(tmp_path / "s.pdf"),
        json=str(tmp_path / "s.json"),
        organization=slug,
        stdout=out,
    )
    assert out.getvalue().startswith("Valid: the recipient summary is signed")
    with pytest.raises(CommandError, match="does not match the signed summary"):
        call_command(
            "verify_report",
            str(tmp_path / "s.pdf"),
            json=str(tmp_path / "bad.json"),
            organization=slug,
            stdout=io.StringIO(),
        )
