"""Identifiers left in released text: measured on the de-identified file, and the guard that
keeps such a file from being submitted.

Step 2 suggests a column whose values hold names, phone numbers, exact dates or ages as a
direct identifier; Step 7 removes it (the default) or scrubs it (each detected span replaced
by a typed placeholder). Whatever the roles, the file written in Step 7 is scanned again:
every released text column that is neither a quasi-identifier (the risk measurement covers
those) nor a pseudonymized or encrypted direct identifier (a character-masked one is read:
what the masking kept is released text). A column in which the detectors still find
something blocks the submission, naming the column and the step that fixes it — unless the
analyst has read the detections and explained why they are not identifiers, naming what was
found or choosing one of the grounds offered (`apps.assessments.release_reasons`); the
reviewer then sees that explanation as an override (IPC guideline, step 2; Portage guidance
on qualitative data).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.selectors import membership_get
from apps.assessments.configuration import DeidConfig
from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment
from apps.assessments.release_reasons import (
    grounds_for,
    review_by,
    review_covers,
    review_entry,
    review_text,
)
from apps.audit.services import audit_record
from apps.classification.detectors import CLOSED_MAX_DISTINCT, CLOSED_MAX_UNIQUE_SHARE
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.engine.freetext import (
    SPAN_LABELS,
    detector_descriptions,
    scan_frame,
)

# Masked direct identifiers whose released values are pseudonyms or ciphertext: not text a
# detector can read (a scrubbed or character-masked column is scanned again).
OPAQUE_METHODS = frozenset({"hmac", "random", "encrypt"})
FREE_TEXT_KINDS = frozenset({"free_text", "free_text_identifiers"})


def free_text_columns(assessment: Assessment) -> list[str]:
    """Direct identifiers that are text (Step 7 offers scrubbing for these)."""
    return [
        v.name
        for v in Variable.objects.filter(dataset=assessment.dataset, role="direct").order_by(
            "position"
        )
        if v.suggestion_kind in FREE_TEXT_KINDS or v.inferred_type == "free_text"
    ]


def release_text_scan(
    original: pl.LazyFrame,
    released: pl.DataFrame | pl.LazyFrame,
    *,
    quasi: list[str],
    masking: dict[str, dict[str, Any]],
    roles: dict[str, str],
) -> dict[str, Any]:
    """What the detectors find in the release, and what scrubbing took out.

    ``identifier_scan``: one entry per scanned released column (text, not a quasi-identifier,
    not an opaque masked identifier), with the spans still found. ``scrubbed``: for each
    scrubbed column, the spans replaced (found in the original) and those found again in
    the released column (the re-scan). ``detectors``: what ran, for the report.
    """
    opaque = {c for c, spec in masking.items() if spec.get("method") in OPAQUE_METHODS}
    texts = [
        c
        for c, dtype in released.lazy().collect_schema().items()
        if c not in quasi and c not in opaque and dtype == pl.String
    ]
    lists = category_lists(released, [c for c in texts if roles.get(c) != "direct"])
    scanned = [c for c in texts if c not in lists]
    after = {s.column: s for s in scan_frame(released, scanned)}
    scrub = [c for c, spec in masking.items() if spec.get("method") == "scrub"]
    before = {s.column: s for s in scan_frame(original, scrub, examples=False)} if scrub else {}
    return {
        "identifier_scan": [
            {**after[c].to_dict(), "role": roles.get(c, "other"), "in_words": after[c].in_words()}
            for c in scanned
        ],
        "scrubbed": [
            {
                "column": c,
                "spans_replaced": dict(before[c].spans),
                "rows_scrubbed": before[c].rows_with_spans,
                "values": before[c].values,
                "replaced_in_words": before[c].in_words(),
                "spans_after": dict(after[c].spans) if c in after else {},
            }
            for c in scrub
        ],
        "detectors": detector_descriptions(),
        "category_lists": lists,
    }


def category_lists(released: pl.DataFrame | pl.LazyFrame, columns: list[str]) -> list[str]:
    """The columns that are category lists — few different values, each held by many
    records, as Step 2 tells them from text (`apps.classification.detectors`) — which the
    free-text detectors do not read: "Hamilton" or "Crohn disease" there is a category, not
    a person (issue #22). What such a column can expose is measured with the other released
    columns (`apps.assessments.release_columns`). Direct identifiers are always read."""
    if not columns:
        return []
    frame = released.lazy()

    def counted(names: list[str], distinct: str) -> dict[str, Any]:
        exprs = [getattr(pl.col(c).drop_nulls(), distinct)().alias(f"d{c}") for c in names]
        counts = [pl.col(c).count().alias(f"n{c}") for c in names]
        return frame.select(*exprs, *counts).collect(engine="streaming").row(0, named=True)

    # An estimate first (a few kilobytes whatever the column), then the exact count of the
    # few columns that may be lists: a column of a million distinct texts is never held.
    estimate = counted(columns, "approx_n_unique")
    few = [c for c in columns if estimate[f"d{c}"] <= 2 * CLOSED_MAX_DISTINCT]
    exact = counted(few, "n_unique") if few else {}
    return [
        c
        for c in few
        if 0 < exact[f"d{c}"] <= CLOSED_MAX_DISTINCT
        and exact[f"d{c}"] <= CLOSED_MAX_UNIQUE_SHARE * exact[f"n{c}"]
    ]


def identifier_findings(
    apply_result: dict[str, Any] | None, config: DeidConfig | None
) -> list[dict[str, Any]]:
    """Released columns in which the detectors found something, each with the analyst's
    explanation if one answers every kind found (``reviewed``: what the reviewer reads, or
    "")."""
    if not apply_result:
        return []
    reviewed = config.identifiers_reviewed if config is not None else {}
    out = []
    for entry in apply_result.get("identifier_scan") or []:
        if not entry.get("rows_with_spans"):
            continue
        review = reviewed.get(entry["column"])
        covered = review_covers(review, (entry.get("spans") or {}).keys())
        out.append(
            {
                **entry,
                "labels": {
                    SPAN_LABELS.get(t, t.lower()): n for t, n in (entry.get("spans") or {}).items()
                },
                "kinds": sorted((entry.get("spans") or {}).keys()),
                "grounds": [
                    (g.key, g.text) for g in grounds_for((entry.get("spans") or {}).keys())
                ],
                "reviewed": review_text(review) if covered else "",
                "reviewed_by": review_by(review) if covered else "",
            }
        )
    return out


def identifier_blockers(
    apply_result: dict[str, Any] | None, config: DeidConfig | None
) -> list[str]:
    """The submission blockers: one per released column with untreated detections."""
    if not apply_result:
        return []
    if "identifier_scan" not in apply_result:
        return [
            "The de-identified file was written before released text was checked for "
            "identifiers: write it again (Step 7)."
        ]
    blockers = []
    for finding in identifier_findings(apply_result, config):
        if finding["reviewed"]:
            continue
        column = finding["column"]
        blockers.append(
            f"Column '{column}' is released with identifiers the detectors found "
            f"({finding['in_words']}). In Step 7, remove or scrub it (classify it as a direct "
            "identifier in Step 2 first if it is not one), or, if what was found is not "
            "identifying, explain why under “Identifiers found in the release”, naming what was "
            "found or choosing one of the grounds offered."
        )
    return blockers


@transaction.atomic
def identifiers_reviewed_set(
    *, assessment: Assessment, user: User, column: str, reason: str, ground: str = ""
) -> None:
    """Record the analyst's reading of a released column's detections: why they are not
    identifiers, in a sentence naming what was found, or one of the grounds offered
    (`apps.assessments.release_reasons`). An empty reason and no ground withdraws it.
    Audited; the reviewer sees it as an override."""
    if not membership_get(user=user, organization=assessment.organization).can_edit:
        raise ApplicationError(
            "Only analysts and administrators explain what was found in released text.",
            status=403,
        )
    assessment_editable(assessment)
    locked = Assessment.objects.select_for_update().get(id=assessment.id)
    findings = {f["column"]: f for f in identifier_findings(locked.apply_result, locked.deid)}
    if column not in findings:
        raise ApplicationError(
            f"Nothing was detected in the released column '{column}'.", {"column": column}
        )
    config = locked.deid
    reviewed = dict(config.identifiers_reviewed)
    entry: dict[str, Any] | None = None
    if reason.strip() or ground:
        entry = review_entry(
            column=column,
            kinds=findings[column]["kinds"],
            reason=reason,
            ground=ground,
            by=user.get_username(),
        )
        reviewed[column] = entry
    else:
        reviewed.pop(column, None)
    locked.deid_config = config.replace(identifiers_reviewed=reviewed).to_json()
    locked.save(update_fields=["deid_config", "updated_at"])
    assessment.deid_config = locked.deid_config
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="assessment.identifiers_reviewed",
        obj=assessment,
        details={
            "column": column,
            "reason": entry["reason"] if entry else "",
            "ground": entry["ground"] if entry else "",
            "findings": findings[column]["kinds"],
        },
    )
