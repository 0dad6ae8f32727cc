"""The Step 9 report (IPC 2016, step 9): gathered from the stored results, rendered to PDF by
WeasyPrint, signed with the organization's certificate, stored, and matched back to its
review decision when someone presents a copy.

Nothing here recomputes a figure: every number comes from the JSON results the steps stored,
so the report says exactly what the pages and the API said when the reviewer decided.
"""

from __future__ import annotations

import hashlib
import logging
from typing import IO, Any, NoReturn

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import transaction
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from apps.accounts.models import Organization, signing_passphrase_purpose
from apps.accounts.selectors import membership_get
from apps.assessments.attack_tests import attack_rows
from apps.assessments.freetext import identifier_findings
from apps.assessments.hierarchies import class_threshold, value_lists
from apps.assessments.models import Assessment
from apps.assessments.presenters import (
    class_size_before_after,
    distribution_charts,
    pareto_chart,
    person_risk_chart,
    population_chart,
    record_risk_rows,
    risk_charts,
)
from apps.assessments.release_columns import column_findings, masked_columns
from apps.assessments.steps import BY_SLUG, STEPS
from apps.assessments.verdicts import loss_headline, missingness_figures, search_verdict
from apps.audit.services import audit_key_is_public
from apps.core import crypto
from apps.core.errors import ApplicationError
from apps.core.labels import label_for
from apps.core.outbound import OutboundPolicy, OutboundRefused, check_url
from apps.datasets.storage import delete_quietly
from apps.engine import context as engine_context
from apps.jobs.models import Job
from apps.jobs.services import JobContext
from apps.reports import signing
from apps.reports.models import Report
from apps.reviews.models import (
    MotivatedIntruderTest,
    ReleaseRecord,
    ReviewDecision,
    StepComment,
    Submission,
)
from apps.reviews.selectors import intruder_test_status, version_chain
from apps.reviews.snapshot import AssessmentRecord, assessment_record

logger = logging.getLogger(__name__)

SIGNING_REASON = "Step 9 de-identification report (IPC 2016, step 9)"


# --------------------------------------------------------------------------- signing identity


def _signing_path(organization: Organization) -> str:
    return f"organizations/{organization.id}/signing/signing.p12"


def _read(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        data: bytes = handle.read()
    return data


def _identity(organization: Organization) -> tuple[bytes, str] | None:
    """The stored PKCS#12 bundle and its passphrase; None when the organization has none.

    A recorded identity that cannot be read is an error, never a reason to make a new one:
    a new certificate would silently stop every report signed so far from verifying."""
    if not (organization.signing_certificate_path and organization.signing_passphrase_sealed):
        return None
    try:
        passphrase = crypto.open_text(
            organization.signing_passphrase_sealed,
            purpose=signing_passphrase_purpose(organization.id),
        )
        bundle = _read(organization.signing_certificate_path)
        signing.certificate_of(bundle, passphrase)
    except (OSError, ValueError, crypto.SecretUnreadable):
        logger.exception("the signing identity of organization %s is unreadable", organization.id)
        raise ApplicationError(
            "The organization's signing certificate cannot be read from storage; an "
            "administrator must restore it (reports signed with it would no longer verify "
            "against a new one)."
        ) from None
    return bundle, passphrase


def organization_signing_ensure(*, organization: Organization) -> bytes:
    """The organization's signing certificate (PEM), creating the identity when it has none.

    The PKCS#12 bundle (key and certificate, encrypted with the passphrase) goes to the
    storage backend; the passphrase is kept on the organization, apart from the file, sealed
    with a data key of its own under the master key (``apps.core.crypto``)."""
    existing = _identity(organization)
    if existing is not None:
        return signing.certificate_pem(*existing)
    with transaction.atomic():
        locked = Organization.objects.select_for_update().get(id=organization.id)
        existing = _identity(locked)  # another process may have created it meanwhile
        if existing is None:
            bundle, passphrase, pem = signing.create_signing_identity(locked.name, locked.name)
            name = default_storage.save(_signing_path(locked), ContentFile(bundle))
            locked.signing_certificate_path = name
            locked.signing_passphrase_sealed = crypto.seal_text(
                passphrase, purpose=signing_passphrase_purpose(locked.id)
            )
            locked.save(
                update_fields=[
                    "signing_certificate_path",
                    "signing_passphrase_sealed",
                    "updated_at",
                ]
            )
        else:
            pem = signing.certificate_pem(*existing)
    organization.signing_certificate_path = locked.signing_certificate_path
    organization.signing_passphrase_sealed = locked.signing_passphrase_sealed
    return pem


def organization_certificates(organization: Organization) -> list[bytes]:
    """Every certificate the organization's reports may be signed with: the current one and
    those of identities it replaced (their reports stay verifiable)."""
    current = organization_signing_ensure(organization=organization)
    previous = [pem.encode() for pem in organization.signing_previous_certificates or []]
    return [current, *previous]


def timestamp_url(organization: Organization) -> str:
    """The timestamp authority that countersigns the organization's signatures, if any."""
    return organization.signing_timestamp_url or str(getattr(settings, "DEIDWEB_TSA_URL", ""))


def timestamp_policy() -> OutboundPolicy:
    """Where the server may call a timestamp authority (``apps.core.outbound``): public https
    addresses, and what the operator allows besides (plain http, in-house networks)."""
    return OutboundPolicy.of(
        allow_http=bool(getattr(settings, "DEIDWEB_TSA_ALLOW_HTTP", False)),
        allowed_networks=getattr(settings, "DEIDWEB_TSA_ALLOWED_NETWORKS", ()),
        timeout=float(getattr(settings, "DEIDWEB_TSA_TIMEOUT_SECONDS", 10)),
    )


@transaction.atomic
def organization_signing_import(
    *, organization: Organization, user: Any, bundle: bytes, passphrase: str
) -> dict[str, str]:
    """Replace the organization's signing identity by an imported PKCS#12 bundle (typically
    issued by a certification authority). Administrators only; checked before use; the old
    certificate is kept so that earlier reports still verify; audited with both
    fingerprints. Returns the new certificate's description."""
    from apps.accounts.selectors import membership_get
    from apps.audit.services import audit_record

    if not membership_get(user=user, organization=organization).is_admin:
        raise ApplicationError("Only administrators change the signing certificate.", status=403)
    try:
        pem = signing.check_identity(bundle, passphrase, organization=organization.name)
    except signing.IdentityError as exc:
        raise ApplicationError(f"The signing certificate was not imported: {exc}") from None
    locked = Organization.objects.select_for_update().get(id=organization.id)
    previous_pem = b""
    if _identity(locked) is not None:
        previous_pem = signing.certificate_pem(*_identity(locked))  # type: ignore[misc]
    name = default_storage.save(_signing_path(locked), ContentFile(bundle))
    history = list(locked.signing_previous_certificates or [])
    if previous_pem and previous_pem.decode() not in history and previous_pem != pem:
        history.append(previous_pem.decode())
    old_path = locked.signing_certificate_path
    locked.signing_certificate_path = name
    locked.signing_passphrase_sealed = crypto.seal_text(
        passphrase, purpose=signing_passphrase_purpose(locked.id)
    )
    locked.signing_previous_certificates = history
    locked.save(
        update_fields=[
            "signing_certificate_path",
            "signing_passphrase_sealed",
            "signing_previous_certificates",
            "updated_at",
        ]
    )
    for field in (
        "signing_certificate_path",
        "signing_passphrase_sealed",
        "signing_previous_certificates",
    ):
        setattr(organization, field, getattr(locked, field))
    described = signing.describe_certificate(pem)
    audit_record(
        organization=organization,
        actor=user,
        action="organization.signing_imported",
        obj=organization,
        details={
            "subject": described["subject"],
            "sha256": described["sha256"],
            "replaced_sha256": signing.describe_certificate(previous_pem)["sha256"]
            if previous_pem
            else "",
            "replaced_file": old_path,
        },
    )
    return described


@transaction.atomic
def organization_timestamp_url_set(*, organization: Organization, user: Any, url: str) -> None:
    """Set (or clear) the organization's timestamp authority; administrators only, audited."""
    from django.core.exceptions import ValidationError
    from django.core.validators import URLValidator

    from apps.accounts.selectors import membership_get
    from apps.audit.services import audit_record

    if not membership_get(user=user, organization=organization).is_admin:
        raise ApplicationError("Only administrators change the timestamp authority.", status=403)
    url = url.strip()
    if url:
        if len(url) > Organization._meta.get_field("signing_timestamp_url").max_length:  # type: ignore[operator]
            raise ApplicationError("The timestamp authority's address is too long.")
        try:
            check_url(url, timestamp_policy(), what="timestamp authority")
        except OutboundRefused as exc:
            raise ApplicationError(
                f"The timestamp authority was not saved: {exc}.", {"field": "timestamp_url"}
            ) from None
        try:
            URLValidator(schemes=["http", "https"])(url)
        except ValidationError:
            raise ApplicationError(f"'{url}' is not an http(s) address.") from None
    Organization.objects.filter(id=organization.id).update(signing_timestamp_url=url)
    previous = organization.signing_timestamp_url
    organization.signing_timestamp_url = url
    audit_record(
        organization=organization,
        actor=user,
        action="organization.timestamp_url",
        obj=organization,
        details={"from": previous, "to": url},
    )


def organization_certificate(organization: Organization) -> bytes:
    """The certificate (PEM) that the organization's reports are checked against.

    Creates the identity on first use: an organization that never signed anything then
    simply holds a certificate no presented report chains to."""
    return organization_signing_ensure(organization=organization)


# --------------------------------------------------------------------------- report content

STEP_TITLES = {step.slug: f"Step {step.number}: {step.title}" for step in STEPS}
STEP_TITLES["general"] = "General"


def _person(user: User | None) -> str:
    if user is None:
        return "(a deleted user)"
    return user.get_full_name() or user.get_username()


def _alternatives(search: dict[str, Any], levels: Any) -> list[dict[str, Any]]:
    from apps.assessments.presenters import alternatives_rows

    return alternatives_rows(search or None, levels)


def _masking_rows(
    masking: dict[str, Any], measured: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, str]]:
    """How each direct identifier was masked: the method and its public parameters only, and
    for character masking what was kept of the values (measured on the release). Keys and
    linking tables never come near the report."""
    rows = []
    for column, spec in masking.items():
        method = str(spec.get("method", ""))
        detail = label_for("masking_method_detail", method)
        if method == "mask":
            lead, trail = int(spec.get("keep_leading") or 0), int(spec.get("keep_trailing") or 0)
            detail += f": keeps {lead} leading and {trail} trailing characters, never more "
            detail += "than half of a value"
            kept = (measured or {}).get(column)
            if kept and kept.get("kept"):
                figures = kept["kept"]
                detail += (
                    f"; at most {figures['most_kept']} characters of a value were kept, "
                    f"{100 * float(figures['mean_share']):.0f} % of its characters on average; "
                    f"{int(kept['values']):,} distinct masked values, "
                    f"{int(kept['with_column']['uniques']):,} records alone in their class "
                    "with the quasi-identifiers"
                )
        elif method in {"hmac", "random"} and spec.get("length"):
            detail += f"; pseudonyms of {int(spec['length'])} characters"
        rows.append({"column": column, "method": method, "detail": detail})
    return rows


def _hierarchy_rows(record: AssessmentRecord) -> list[dict[str, Any]]:
    """Each frozen hierarchy with its levels, the applied one marked."""
    applied = record.assessment.apply_result or {}
    levels = applied.get("levels") or record.assessment.chosen_levels or {}
    rows = []
    for spec in record.hierarchies:
        chosen = levels.get(spec["column"])
        labels = list(spec.get("level_labels") or [])
        rows.append(
            {
                "column": spec["column"],
                "kind": label_for("hierarchy_kind", spec["kind"]),
                "height": spec["height"],
                "labels": [
                    {"level": i, "label": label, "chosen": i == chosen}
                    for i, label in enumerate(labels)
                ],
                "chosen_level": chosen,
                "chosen_label": (applied.get("level_labels") or {}).get(spec["column"])
                or (labels[chosen] if chosen is not None and chosen < len(labels) else ""),
            }
        )
    return rows


def _insider_table(context_result: dict[str, Any] | None, profile: str) -> dict[str, Any] | None:
    from apps.engine.threshold import get_profile

    if not context_result or not context_result.get("insider"):
        return None
    try:
        data = get_profile(profile)
    except Exception:
        return None
    insider = context_result["insider"]
    motives = list(next(iter(data.insider_attack.values())).keys()) if data.insider_attack else []
    return {
        "name": data.name,
        "source": data.insider_attack_source,
        "motives": motives,
        "rows": [
            {
                "controls": controls,
                "cells": [
                    {
                        "value": row.get(m),
                        "used": controls == insider.get("controls") and m == insider.get("motives"),
                    }
                    for m in motives
                ],
            }
            for controls, row in data.insider_attack.items()
        ],
    }


def _assumptions(assessment: Assessment, overall: dict[str, Any] | None) -> list[str]:
    """The method's standing assumptions, stated so a reader can challenge them."""
    risk = assessment.risk_result or {}
    context = assessment.context_result or {}
    search = assessment.search_result or {}
    knows = (assessment.threat_model or {}).get("target_in_sample", "known") == "known"
    items = [
        "An adversary is assumed to know that the person they look for is in the data set "
        "(prosecutor risk), the conservative choice of the guideline (IPC 2016, scope)."
        if knows
        else "The threat model records an adversary who cannot tell whether the person they "
        "look for is in the data set; the data risk is still measured as if they could "
        "(prosecutor risk), the conservative choice of the guideline (IPC 2016, scope).",
        "Equivalence classes are formed on the confirmed quasi-identifiers only; a missing value "
        "counts as a value of its own (IPC 2016, step 4).",
        "Every quasi-identifier is assumed to be knowable by an adversary from other sources; "
        "the sensitive and other variables are assumed not to be (IPC 2016, step 2).",
    ]
    if risk.get("unit") == "person":
        items.append(
            "The data holds several rows per person: risk is counted in persons, never rows. "
            f"An adversary is assumed to know a person's person-level values and at most "
            f"{risk.get('power')} of their events; a person's count is the number of persons "
            "sharing those values and holding every event of the worst such set (El Emam & "
            "Arbuckle 2013, ch. 6; k^m-anonymity, Terrovitis et al. 2008)."
        )
    if risk.get("profile", {}).get("strict_average_cap") is not None and (
        assessment.effective_release_model == "non_public"
    ):
        items.append(
            "Strict average risk uses the cap of "
            f"{risk['profile']['strict_average_cap']}: above it the max risk applies "
            "(IPC 2016, step 4)."
        )
    if assessment.effective_release_model == "public":
        items.append(
            "A public release is assumed to be attacked: the context risk is 1 (IPC 2016, step 5)."
        )
    elif context:
        acquaintance = context.get("acquaintance") or {}
        breach = context.get("breach") or {}
        if acquaintance:
            items.append(
                f"Each person is assumed to know {acquaintance.get('acquaintances')} people "
                f"(effective {acquaintance.get('effective_acquaintances')}); prevalence "
                f"{acquaintance.get('prevalence')} — source: "
                f"{context.get('prevalence_source') or 'not given'} (IPC 2016, step 5)."
            )
        if breach:
            items.append(
                f"The recipient's sector is assumed to suffer a breach with probability "
                f"{breach.get('rate')} — source: {breach.get('source')} (IPC 2016, step 5)."
            )
        if context.get("release_model") != context.get("declared_release_model"):
            items.append(
                "The release was declared non-public but no data sharing agreement is recorded, "
                "so it is handled as semi-public (IPC 2016, step 1)."
            )
    if search:
        items.append(
            f"At most {float(search.get('suppression_limit', 0)) * 100:.1f}% of the records may be "
            "suppressed (IPC 2016, step 7.2 and step 8)."
        )
    return items


def _justifications(
    assessment: Assessment, variables: list[dict[str, Any]]
) -> list[dict[str, str]]:
    items = []
    threshold = assessment.threshold_result or {}
    if threshold.get("origin") and threshold.get("origin") != "profile":
        items.append(
            {
                "topic": "Step 3: threshold override",
                "text": f"{threshold.get('origin', '').capitalize()} threshold {threshold.get('value')} "
                f"instead of {threshold.get('profile_threshold')} from the questionnaire"
                + (
                    f", outside the profile's range {threshold['profile_range'][0]} to "
                    f"{threshold['profile_range'][1]}"
                    if threshold.get("outside_profile_range")
                    else ""
                )
                + f". Justification: {threshold.get('justification') or '(none recorded)'}",
            }
        )
    for v in variables:
        if v["overridden"]:
            items.append(
                {
                    "topic": f"Step 2: {v['name']}",
                    "text": f"Classified as {v['role_label'].lower()} although the suggestion was "
                    f"{v['suggested_label'].lower()}. Reason: {v['reason'] or '(none)'}",
                }
            )
        if v["keep_for_analysis"]:
            items.append(
                {
                    "topic": f"Step 2: {v['name']}",
                    "text": "Kept for the analysis and therefore generalized rather than removed "
                    f"(IPC 2016, step 2). Reason: {v['reason'] or '(none)'}",
                }
            )
    if assessment.purpose:
        items.append({"topic": "Step 1: purpose of the release", "text": assessment.purpose})
    if assessment.utility_note:
        items.append(
            {"topic": "Step 8: utility accepted for the purpose", "text": assessment.utility_note}
        )
    return items


def _decision_row(decision: ReviewDecision, current: ReviewDecision) -> dict[str, Any]:
    return {
        "id": decision.id,
        "reviewer": _person(decision.reviewer),
        "decision": decision.decision,
        "decision_label": label_for("decision_outcome", decision.decision),
        "reasons": decision.reasons,
        "version": decision.version,
        "final": decision.final,
        "at": decision.created_at,
        "this": decision.id == current.id,
    }


def report_context(*, assessment: Assessment, decision: ReviewDecision) -> dict[str, Any]:
    """Everything the Step 9 template shows, read from the version's frozen record and the
    review rows up to the decision: rendering it again later gives the same report."""
    if decision.assessment_id != assessment.id:
        raise ApplicationError("The decision is about another assessment.")
    organization = assessment.organization
    dataset = assessment.dataset
    record = assessment_record(assessment)
    assessment = record.assessment
    decided_at = decision.created_at
    threshold = assessment.threshold_result or {}
    risk = assessment.risk_result or {}
    context = assessment.context_result or {}
    search = assessment.search_result or {}
    applied = assessment.apply_result or {}
    utility = applied.get("utility") or {}
    overall = record.overall
    variables, change_count = record.variables, record.classification_changes

    risk_after = applied.get("risk_after") or {}
    context_value = context.get("value")
    threshold_value = threshold.get("value")
    overall_after = (
        float(risk_after["data_risk"]) * float(context_value)
        if risk_after.get("data_risk") is not None and context_value is not None
        else None
    )
    passes_after = (
        overall_after <= float(threshold_value) + 1e-12
        if overall_after is not None and threshold_value is not None
        else None
    )
    if applied.get("passes") is not None and passes_after is not None:
        passes_after = bool(passes_after and applied["passes"])

    # JSONB stores object keys sorted by length, so "20+" comes back before "3-4": put the
    # class-size buckets back in order of size before drawing or tabulating them.
    risk = _with_ordered_buckets(risk)
    risk_after = _with_ordered_buckets({"profile": risk_after})["profile"] if risk_after else {}
    charts: dict[str, Any] = {}
    if risk.get("profile"):
        charts["risk"] = {k: _for_print(v) for k, v in risk_charts(risk, overall).items()}
    charts["population"] = _for_print(population_chart(risk.get("population")))
    charts["persons"] = _for_print(person_risk_chart(risk))
    if search:
        charts["pareto"] = _for_print(pareto_chart(search, assessment.chosen_levels))
    charts["class_sizes"] = _for_print(
        class_size_before_after(applied.get("risk_before"), applied.get("risk_after"))
    )
    charts["distributions"] = [
        _for_print(c)
        for c in distribution_charts(
            applied.get("distributions") or [], hide_below=class_threshold(assessment)
        )
    ]

    # Only what existed when the decision was taken, so the report never changes after it.
    decisions = list(
        ReviewDecision.objects.filter(assessment_id=assessment.id, created_at__lte=decided_at)
        .select_related("reviewer")
        .order_by("created_at")
    )
    submissions = list(
        Submission.objects.filter(assessment_id=assessment.id, created_at__lte=decided_at)
        .select_related("submitted_by")
        .order_by("created_at")
    )
    comments = [
        {
            "step": STEP_TITLES.get(c.step, c.step),
            "author": _person(c.author),
            "at": c.created_at,
            "text": c.text,
            "version": c.assessment.version,
        }
        for c in StepComment.objects.filter(
            assessment_id__in=version_chain(assessment), created_at__lte=decided_at
        )
        .select_related("author", "assessment")
        .order_by("created_at")
    ]
    release_record = ReleaseRecord.objects.filter(assessment_id=assessment.id).first()
    intruder_tests = list(
        MotivatedIntruderTest.objects.filter(
            assessment_id=assessment.id, created_at__lte=decided_at
        ).order_by("tested_on")
    )
    pem = organization_certificate(organization)

    small = risk.get("small_cells") or {}
    small_by_column: dict[str, int] = {}
    for cell in small.get("univariate") or []:
        for column in cell.get("columns") or []:
            small_by_column[column] = small_by_column.get(column, 0) + 1

    model = assessment.effective_release_model
    return {
        "organization": organization,
        "assessment": assessment,
        "dataset": dataset,
        "decision": decision,
        "decision_row": _decision_row(decision, decision),
        "generated_at": decided_at,
        "audit_anchor": {"sequence": decision.audit_sequence, "hash": decision.audit_hash},
        "audit_key_public": audit_key_is_public(),
        "snapshot": record.snapshot,
        "steps": STEPS,
        "step_refs": {s.slug: s.guideline for s in STEPS},
        "release_model": model,
        "release_model_label": label_for("release_model", model),
        "declared_release_model_label": label_for("release_model", assessment.release_model),
        "handled_as_semi_public": model != assessment.release_model,
        "threshold": threshold,
        "threshold_value": threshold_value,
        "risk": risk,
        "risk_before": applied.get("risk_before") or {},
        "risk_after": risk_after,
        "context": context,
        "context_value": context_value,
        "insider_table": _insider_table(context, assessment.threshold_profile),
        "threat_model": record.threat_model,
        "attack_rows": attack_rows(applied.get("attacks")),
        "overall": overall,
        "overall_after": overall_after,
        "passes_after": passes_after,
        "search": search,
        "alternatives": _alternatives(search, applied.get("levels")),
        "search_metric_label": label_for("metric", search.get("metric", ""), empty=""),
        # what the search may claim (its caps and lattice), the loss headline, and what
        # the missingness counts: the same words as Step 7, Step 8 and the review page
        "search_verdict": search_verdict(search),
        "loss_headline": loss_headline(applied, search),
        "missingness": missingness_figures(applied),
        "applied": applied,
        "utility": utility,
        "masking": _masking_rows(
            applied.get("masking") or {},
            {m["column"]: m for m in masked_columns(applied)},
        ),
        "text_findings": identifier_findings(applied, record.deid_config),
        "column_findings": column_findings(applied, record.deid_config),
        "hierarchies": _hierarchy_rows(record),
        "value_lists": value_lists(record.assessment, record.hierarchies),
        "control_questions": dict(engine_context.CONTROLS),
        "motive_questions": {key: question for key, question, _ in engine_context.MOTIVES},
        "record_risks": record_risk_rows(applied.get("risk_before"), applied.get("risk_after")),
        "variables": variables,
        "variable_counts": {
            role: sum(1 for v in variables if v["role"] == role)
            for role in ("direct", "quasi", "sensitive", "other", "")
        },
        "classification_changes": change_count,
        "small_cells": small,
        "small_cells_by_column": sorted(small_by_column.items()),
        "attribute_disclosure": risk.get("attribute_disclosure") or [],
        "charts": charts,
        "assumptions": _assumptions(assessment, overall),
        "justifications": _justifications(assessment, variables),
        "decisions": [_decision_row(d, decision) for d in decisions],
        "submissions": [
            {"by": _person(s.submitted_by), "at": s.created_at, "note": s.note} for s in submissions
        ],
        "comments": comments,
        "release_record": release_record,
        "intruder_tests": intruder_tests,
        "intruder": intruder_test_status(assessment, until=decided_at),
        "digests": {**record.digests(), **(decision.digests or {})},
        "certificate": signing.describe_certificate(pem),
        "timestamp_url": timestamp_url(organization),
        "people": {
            "created_by": _person(assessment.created_by) if assessment.created_by_id else "—",
            "submitted_by": ", ".join(
                sorted({_person(s.submitted_by) for s in submissions if s.submitted_by_id})
            )
            or "—",
            "reviewers": ", ".join(dict.fromkeys(_person(d.reviewer) for d in decisions)) or "—",
        },
        "step_title": STEP_TITLES,
        "by_slug": BY_SLUG,
    }


# The charts' inline style (max-width with height:auto) makes WeasyPrint draw every chart as
# a square; without it the print stylesheet scales them by their own aspect ratio.
_SCREEN_SVG_STYLE = ' style="max-width:100%;height:auto"'


def _for_print(chart: SafeString | None) -> SafeString | None:
    if chart is None:
        return None
    return mark_safe(str(chart).replace(_SCREEN_SVG_STYLE, ""))  # noqa: S308  # already escaped


def _bucket_low(label: str) -> int:
    digits = ""
    for char in label:
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else 0


def _with_ordered_buckets(result: dict[str, Any]) -> dict[str, Any]:
    profile = result.get("profile") or {}
    histogram = profile.get("class_size_histogram")
    if not histogram:
        return result
    ordered = dict(sorted(histogram.items(), key=lambda item: _bucket_low(item[0])))
    return {**result, "profile": {**profile, "class_size_histogram": ordered}}


# --------------------------------------------------------------------------- render and sign


def _url_fetcher() -> Any:
    """WeasyPrint may read nothing from outside: only inline data: URIs are allowed."""
    from weasyprint.urls import URLFetcher

    return URLFetcher(allowed_protocols={"data"}, timeout=1)


def report_html(
    *, assessment: Assessment, decision: ReviewDecision, viewer: dict[str, str] | None = None
) -> str:
    """The report's HTML: what the PDF is made of. ``viewer`` (links to the signed PDF and
    the verify page) adds a banner for reading it in the browser; the PDF never has one."""
    context = report_context(assessment=assessment, decision=decision)
    return render_to_string("reports/step9.html", {**context, "viewer": viewer})


def report_render(*, assessment: Assessment, decision: ReviewDecision) -> bytes:
    """The report as PDF bytes (unsigned)."""
    from weasyprint import HTML

    html = report_html(assessment=assessment, decision=decision)
    base_url = str(settings.BASE_DIR / "templates" / "reports") + "/"
    document = HTML(string=html, base_url=base_url, url_fetcher=_url_fetcher())
    pdf = document.write_pdf()
    assert pdf is not None
    return bytes(pdf)


def report_path(*, assessment: Assessment, decision: ReviewDecision) -> str:
    return (
        f"organizations/{assessment.organization_id}/assessments/{assessment.id}/"
        f"v{assessment.version}/report-{decision.id}.pdf"
    )


def report_job_guard(job: Job, action: str) -> None:
    """A report is made by deidweb from a decision's frozen record: never cancelled or
    re-run by hand (``report_request`` prepares a missing one again)."""
    if action in {"cancel", "retry"}:
        raise ApplicationError(
            "The signed report of a decision is prepared by deidweb from the decision's frozen "
            "record; it cannot be cancelled or re-run by hand. If it is missing, a reviewer or "
            "an administrator can ask for it again on the review page.",
            status=409,
        )


def report_request(*, decision: ReviewDecision, user: User | None) -> Job | None:
    """Queue the report of a final decision unless it exists or is being prepared.

    Safe to call again: rendering from the frozen record gives the same content, and an
    intact stored report is returned as it is rather than signed a second time."""
    from apps.jobs.models import JobStatus
    from apps.jobs.services import job_create

    if not decision.final:
        raise ApplicationError("Only a final decision has a signed report.")
    report = Report.objects.filter(decision=decision).first()
    if report is not None and report_intact(report):
        return None
    pending = Job.objects.filter(
        organization_id=decision.organization_id,
        kind="report",
        params__decision_id=str(decision.id),
        status__in=[JobStatus.QUEUED, JobStatus.RUNNING],
    ).first()
    if pending is not None:
        return pending
    return job_create(
        organization=decision.organization,
        kind="report",
        subject=f"assessments.assessment:{decision.assessment_id}",
        params={"decision_id": str(decision.id)},
        created_by=user,
    )


def report_again(*, assessment: Assessment, user: User) -> list[Any]:
    """Prepare again the signed report of each final decision whose report is missing (its
    job failed, or the file was lost). Rendering reads the frozen record, so the content is
    the one decided on."""
    if not membership_get(user=user, organization=assessment.organization).can_review:
        raise ApplicationError(
            "Only reviewers and administrators ask for a report to be prepared again.", status=403
        )
    jobs = []
    for decision in ReviewDecision.objects.filter(assessment=assessment, final=True):
        job = report_request(decision=decision, user=user)
        if job is not None:
            jobs.append(job)
    if not jobs:
        raise ApplicationError("Every decision of this version has its signed report.", status=409)
    return jobs


def report_intact(report: Report) -> bool:
    return default_storage.exists(report.pdf_path) and _sha256(_read(report.pdf_path)) == (
        report.sha256
    )


def report_generate_handler(job: Job, context: JobContext) -> dict[str, Any]:
    """Job kind "report", params {"decision_id"}: render, sign, store, record the digest.

    A decision has one report: when it already exists and its file is intact, the job
    returns it rather than signing a second, different copy."""
    decision = (
        ReviewDecision.objects.select_related(
            "assessment", "assessment__dataset", "assessment__organization", "reviewer"
        )
        .filter(id=job.params.get("decision_id"), organization=job.organization)
        .first()
    )
    if decision is None:
        raise ApplicationError("The review decision of this report no longer exists.")
    assessment = decision.assessment
    organization = assessment.organization
    if not decision.final:
        raise ApplicationError("Only a final decision has a signed report.")
    existing = Report.objects.filter(decision=decision).first()
    if existing is not None and report_intact(existing):
        return _job_result(existing)

    context.progress(5, "Preparing the signing certificate", force=True)
    organization_signing_ensure(organization=organization)
    identity = _identity(organization)
    if identity is None:
        raise ApplicationError("The organization's signing certificate could not be read.")
    context.progress(15, "Rendering the report", force=True)
    pdf = report_render(assessment=assessment, decision=decision)
    context.progress(75, "Signing the report", force=True)
    try:
        signed = signing.sign_pdf(
            pdf,
            identity[0],
            identity[1],
            reason=SIGNING_REASON,
            location=organization.name,
            signer_name=organization.name,
            timestamp_url=timestamp_url(organization),
            timestamp_policy=timestamp_policy(),
        )
    except signing.TimestampError as exc:
        raise ApplicationError(
            f"{exc} The report was not signed; an administrator must correct the address on "
            "the organization's signing page."
        ) from None
    digest = _sha256(signed)
    context.progress(90, "Storing the signed report", force=True)
    name = default_storage.save(
        report_path(assessment=assessment, decision=decision), ContentFile(signed)
    )
    try:
        with transaction.atomic():
            old_path = existing.pdf_path if existing is not None else ""
            report, _created = Report.objects.update_or_create(
                decision=decision,
                defaults={
                    "organization": organization,
                    "assessment": assessment,
                    "pdf_path": name,
                    "sha256": digest,
                    "size_bytes": len(signed),
                    "signer": organization.name,
                    "job": job,
                },
            )
            ReviewDecision.objects.filter(id=decision.id).update(report_sha256=digest)
            from apps.audit.services import audit_record

            audit_record(
                organization=organization,
                actor=job.created_by,
                action="report.generate",
                obj=report,
                details={
                    "assessment": str(assessment.id),
                    "decision": str(decision.id),
                    "sha256": digest,
                    "version": assessment.version,
                },
            )
            if old_path and old_path != name:
                transaction.on_commit(lambda: delete_quietly(old_path))
    except Exception:
        delete_quietly(name)
        raise
    return _job_result(report)


def _job_result(report: Report) -> dict[str, Any]:
    return {
        "report_id": str(report.id),
        "sha256": report.sha256,
        "size_bytes": report.size_bytes,
        "decision_id": str(report.decision_id),
    }


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- verify and read


def report_pdf(report: Report) -> bytes:
    return _read(report.pdf_path)


def report_file_open(*, report: Report, user: Any) -> IO[bytes]:
    """The stored signed report, ready to serve, if it is still the file that was signed.

    Its SHA-256 is checked against the digest recorded at signing (as release files are
    checked against the approved one): a changed or missing file is refused (409) and the
    refusal recorded in the audit trail with both digests; an intact one is served from a
    private copy, so the bytes checked are the bytes sent, and the download is recorded."""
    import tempfile

    from apps.audit.services import audit_record

    digest = hashlib.sha256()
    spool = tempfile.TemporaryFile()  # noqa: SIM115  # handed to the response, which closes it
    try:
        with default_storage.open(report.pdf_path, "rb") as source:
            for chunk in iter(lambda: source.read(1024 * 1024), b""):
                digest.update(chunk)
                spool.write(chunk)
    except OSError:
        spool.close()
        _report_refused(report, user, "", "the signed file is missing from storage")
    actual = digest.hexdigest()
    if actual != report.sha256:
        spool.close()
        _report_refused(report, user, actual, "the stored file differs from the signed one")
    spool.seek(0)
    audit_record(
        organization=report.organization,
        actor=user,
        action="download.report",
        obj=report,
        details={"assessment": str(report.assessment_id), "sha256": actual},
    )
    return spool


def _report_refused(report: Report, user: Any, actual: str, why: str) -> NoReturn:
    from apps.audit.services import audit_record

    with transaction.atomic():
        audit_record(
            organization=report.organization,
            actor=user,
            action="download.report_refused",
            obj=report,
            details={
                "assessment": str(report.assessment_id),
                "signed_sha256": report.sha256,
                "stored_sha256": actual,
                "reason": why,
            },
        )
    raise ApplicationError(
        f"The report cannot be downloaded: {why} (the signed report's SHA-256 is "
        f"{report.sha256}). The refusal is recorded in the audit trail; an administrator must "
        "investigate.",
        {"signed_sha256": report.sha256, "stored_sha256": actual},
        status=409,
    )


def report_verify(*, organization: Organization, pdf: bytes) -> dict[str, Any]:
    """Is this the organization's signed report, unchanged, and of which release decision?"""
    check = signing.verify_pdf(pdf, organization_certificates(organization))
    digest = _sha256(pdf)
    decision = (
        ReviewDecision.objects.filter(organization=organization, report_sha256=digest)
        .select_related("assessment", "reviewer")
        .first()
        if pdf
        else None
    )
    match: dict[str, Any] | None = None
    if decision is not None:
        report = Report.objects.filter(decision=decision).first()
        match = {
            "decision_id": str(decision.id),
            "assessment_id": str(decision.assessment_id),
            "assessment_title": decision.assessment.title,
            "version": decision.version,
            "decision": decision.decision,
            "decision_label": label_for("decision_outcome", decision.decision),
            "final": decision.final,
            "reviewer": _person(decision.reviewer),
            "decided_at": decision.created_at.isoformat(),
            "report_id": str(report.id) if report else None,
        }
    if check.valid and match:
        summary = (
            f"Valid: signed by {check.signer} and unchanged; it is the report of the "
            f"{match['decision_label'].lower()} decision on '{match['assessment_title']}' "
            f"version {match['version']}."
        )
    elif check.valid:
        summary = (
            f"The signature of {check.signer} is valid, but no release decision of this "
            "organization has a report with this exact content."
        )
    else:
        summary = f"Not valid: {check.problem}"
    return {
        "valid": check.valid,
        "signed": check.signed,
        "intact": check.intact,
        "trusted": check.trusted,
        "signer": check.signer,
        "signed_at": check.signed_at.isoformat() if check.signed_at else None,
        "problem": check.problem,
        "sha256": digest,
        "size_bytes": len(pdf),
        "decision": match,
        "summary": summary,
    }
