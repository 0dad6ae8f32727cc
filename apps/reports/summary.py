"""The recipient summary of an approved release: what goes with the data to its recipient
(issue 28), and its machine-readable JSON twin.

The IHE De-Identification Handbook keeps the full risk report with the custodian and hands the
recipient a sanitized "de-identification and risk summary" as part of the release package
(data, version, data dictionary, summary, agreement).  This is that summary: the data
dictionary of the released columns with each transformation's ISO/IEC 20889 class and its
justification (EMA Policy 0070's anonymisation report), the data-sharing model (NIST SP
800-188), the threshold and the profile it comes from, the residual risk, the attack tests,
the threat model, the conditions of use and the approvals.

What it leaves out is as deliberate: no value of any column (no frequent values, no examples,
no hierarchy tables or value lists), none of the Step 3 and Step 5 questionnaire answers, no
reviewer comments, no motivated-intruder details beyond whether a test was done, and no key,
linking table or storage path.  ``summary_data`` builds the whole summary as one JSON-safe
dictionary from the version's frozen record; the PDF is rendered from that dictionary alone,
so it cannot print more than the JSON holds.  ``canonical_json`` is the twin's exact bytes
(sorted keys, no spaces, UTF-8): its SHA-256 is printed in the PDF and carried in the PDF's
keywords, both under the signature.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string

from apps.assessments.attack_tests import attack_rows, known_facts
from apps.assessments.justifications import justification_rows, release_transformations
from apps.assessments.models import Assessment
from apps.assessments.person_suppression import rows_suppressed
from apps.audit.models import canonical_dumps
from apps.core.errors import ApplicationError
from apps.core.labels import label_for
from apps.reports import signing
from apps.reports.identity import organization_certificate
from apps.reviews.models import ReviewDecision
from apps.reviews.selectors import intruder_test_status
from apps.reviews.snapshot import AssessmentRecord, assessment_record

SCHEMA = "deidweb-recipient-summary/1"
# What the PDF's keywords carry before the JSON twin's digest (read back by verification).
DIGEST_MARK = "deidweb-json-sha256:"

# NIST SP 800-188 (2023) names four data-sharing models; a release made by Step 7 is
# de-identified microdata unless it records another form.
SHARING_MODELS = {
    "microdata": "De-identified microdata",
    "synthetic": "Synthetic data",
    "tables": "Aggregated tables",
    "query": "Query interface",
}

# The conditions the custodian attaches to every release, in deidweb's own words; the data
# sharing agreement, when there is one, adds its own (IPC 2016, step 5 controls; UK ICO 2025).
STANDING_CONDITIONS = (
    "Do not attempt to identify any person in the data, nor to contact one.",
    "Do not link the data with other data about the same people unless the custodian agrees "
    "in writing; the risk was measured on the released columns only.",
    "Use the data only for the purpose stated in this summary.",
    "Tell the custodian at once if anyone is identified or believed identified, or if the "
    "data is lost or disclosed to someone not entitled to it.",
    "Do not pass the data on; a new recipient needs a new assessment (CJEU C-413/23 P: "
    "identifiability is judged for each recipient).",
)


def _person(user: Any) -> str:
    if user is None:
        return "(a deleted user)"
    return str(user.get_full_name() or user.get_username())


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


def _dictionary(record: Any, applied: dict[str, Any], justifications: dict[str, Any]) -> list[Any]:
    """Every column of the data set: released or not, its role, and how it was altered."""
    altered = {row["column"]: row for row in justification_rows(applied, justifications or {})}
    masking = applied.get("masking") or {}
    rows = []
    for variable in record.variables:
        name = variable["name"]
        method = str((masking.get(name) or {}).get("method") or "")
        removed = variable["role"] == "direct" and method in ("", "remove")
        row = altered.get(name) or {}
        rows.append(
            {
                "column": name,
                "released": not removed,
                "role": variable["role"] or "unclassified",
                "role_label": label_for("role", variable["role"], empty="Not classified"),
                "type": variable["type"],
                "transformations": [
                    {"detail": t["detail"], "iso_20889_class": t["iso_class"]}
                    for t in row.get("transformations") or []
                ],
                "justification": row.get("justification", ""),
            }
        )
    return rows


def _tables(record: AssessmentRecord) -> list[dict[str, Any]]:
    return [
        {
            key: f.get(key)
            for key in ("name", "table", "role", "format", "rows", "persons", "sha256")
        }
        for f in record.release_tables()
    ]


def summary_data(*, assessment: Assessment, decision: ReviewDecision) -> dict[str, Any]:
    """The recipient summary as JSON-safe data, from the version's frozen record and the
    decisions up to ``decision`` (module docstring): the same every time it is built."""
    if decision.assessment_id != assessment.id:
        raise ApplicationError("The decision is about another assessment.")
    if decision.decision != "approve" or not decision.final:
        raise ApplicationError("Only an approved release has a recipient summary.")
    record = assessment_record(assessment)
    frozen = record.assessment
    applied = frozen.apply_result or {}
    threshold = frozen.threshold_result or {}
    context = frozen.context_result or {}
    profile = threshold.get("profile_detail") or {}
    risk_after = applied.get("risk_after") or {}
    context_value = _number(context.get("value"))
    data_risk = _number(risk_after.get("data_risk"))
    overall = data_risk * context_value if data_risk is not None and context_value else None
    model = frozen.effective_release_model
    form = str(applied.get("release_form") or "microdata")
    approvals = ReviewDecision.objects.filter(
        assessment_id=assessment.id, decision="approve", created_at__lte=decision.created_at
    ).select_related("reviewer")
    intruder = intruder_test_status(frozen, until=decision.created_at)
    files = record.files
    return {
        "schema": SCHEMA,
        "custodian": assessment.organization.name,
        "release": {
            "assessment_id": str(assessment.id),
            "title": frozen.title,
            "version": frozen.version,
            "dataset": record.dataset.get("name", ""),
            "records_released": applied.get("rows_out"),
            "decision_id": str(decision.id),
            "approved_at": decision.created_at.isoformat(),
            "files_sha256": {
                key: (files.get(key) or {}).get("sha256", "")
                for key in ("release_csv", "release_parquet")
                if files.get(key)
            },
            # a release of linked tables: each table's files (name, rows, persons, digest)
            **({"tables": _tables(record)} if record.release_tables() else {}),
        },
        "sharing_model": {
            "form": form,
            "form_label": SHARING_MODELS.get(form, form),
            "release_model": model,
            "release_model_label": label_for("release_model", model),
            "recipient": frozen.recipient_organization or "Anyone (public release)",
            "purpose": frozen.purpose,
        },
        "threshold": {
            "value": _number(threshold.get("value")),
            "measure": profile.get("measure_words") or applied.get("risk_measure", ""),
            "profile": profile.get("name") or threshold.get("profile_name", ""),
            "profile_edition": profile.get("edition", ""),
            "source": profile.get("threshold_source") or threshold.get("source", ""),
            "overridden": threshold.get("origin") not in (None, "profile"),
        },
        "residual_risk": {
            "risk_measure": applied.get("risk_measure", ""),
            "data_risk": data_risk,
            "max_risk": _number(risk_after.get("max_risk")),
            "context_risk": context_value,
            "overall_risk": overall,
            "meets_threshold": bool(applied.get("passes"))
            and overall is not None
            and threshold.get("value") is not None
            and overall <= float(threshold["value"]) + 1e-12,
            "records_suppressed": rows_suppressed(applied),
        },
        "attack_tests": [
            {
                key: row[key]
                for key in (
                    "attack",
                    "question",
                    "attack_rate",
                    "control",
                    "baseline",
                    "attacks",
                    "unit",
                    "seed",
                    "method_version",
                    "verdict",
                )
            }
            for row in attack_rows(applied.get("attacks"))
        ],
        # a person release: what the adversary of the attacks also knows of each person
        # (the number of events and its top-code, the anchor, what a date shift leaves),
        # the list and words of Step 8 and the report (attack_tests.known_facts)
        "attack_known_facts": known_facts(applied.get("attacks")),
        "threat_model": record.threat_model,
        "data_dictionary": _dictionary(record, applied, frozen.variable_justifications),
        "release_transformations": [
            {"detail": t["detail"], "iso_20889_class": t["iso_class"]}
            for t in release_transformations(applied)
        ],
        "conditions_of_use": {
            "agreement": label_for("agreement_kind", frozen.agreement_kind, empty="")
            if frozen.agreement_kind
            else "",
            "agreement_reference": frozen.agreement_reference,
            "conditions": list(STANDING_CONDITIONS),
        },
        "approvals": [
            {
                "reviewer": _person(d.reviewer),
                "decided_at": d.created_at.isoformat(),
                "version": d.version,
                "final": d.final,
            }
            for d in approvals.order_by("created_at")
        ],
        "motivated_intruder_test": "done" if intruder["done"] else "not done",
    }


def canonical_json(data: dict[str, Any]) -> bytes:
    """The JSON twin's bytes: sorted keys, no spaces, UTF-8 (the audit trail's form)."""
    return canonical_dumps(data).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def summary_html(*, organization: Any, data: dict[str, Any], json_sha256: str) -> str:
    """The summary's HTML, from ``data`` alone (and the signing certificate's description)."""
    return render_to_string(
        "reports/summary.html",
        {
            "s": data,
            "json_sha256": json_sha256,
            "digest_mark": DIGEST_MARK,
            "organization": organization,
            "certificate": signing.describe_certificate(organization_certificate(organization)),
        },
    )


def summary_render(*, organization: Any, data: dict[str, Any]) -> tuple[bytes, bytes]:
    """The unsigned PDF and its JSON twin."""
    from weasyprint import HTML
    from weasyprint.urls import URLFetcher

    twin = canonical_json(data)
    html = summary_html(organization=organization, data=data, json_sha256=sha256_hex(twin))
    base_url = str(settings.BASE_DIR / "templates" / "reports") + "/"
    fetcher = URLFetcher(allowed_protocols={"data"}, timeout=1)
    pdf = HTML(string=html, base_url=base_url, url_fetcher=fetcher).write_pdf()
    assert pdf is not None
    return bytes(pdf), twin


__all__ = [
    "DIGEST_MARK",
    "SCHEMA",
    "canonical_json",
    "summary_data",
    "summary_html",
    "summary_render",
]
