"""Released columns that are not quasi-identifiers: measured on the written release, and the
guard that keeps a release they expose from being submitted.

Every released column that is neither a quasi-identifier, a sensitive variable (measured by
l-diversity), a pseudonymized or encrypted identifier (no intruder can compute its values)
nor scrubbed free text (prose, each text its own value: its identifiers are re-scanned,
`apps.assessments.freetext`) is measured as if it were one more quasi-identifier
(`apps.engine.released_columns`): an "other" column left as it is, a character-masked
direct identifier, a scrubbed one that is not free text. A column that has
small cells, creates uniques or raises the data risk above the target, or predicts a
sensitive variable, blocks the submission until it is treated in Step 2 or 7 or explained
(`apps.assessments.release_reasons`); the reviewer sees the finding and the explanation.

A direct identifier released character-masked or scrubbed that singles people out cannot be
explained away: a direct identifier is known to whoever knows the person, so what the
masking kept of it must not tell records apart (a masking that keeps the value is not
masking).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.accounts.selectors import membership_get
from apps.assessments.configuration import DeidConfig
from apps.assessments.drafts import assessment_editable
from apps.assessments.freetext import OPAQUE_METHODS
from apps.assessments.models import Assessment
from apps.assessments.release_reasons import (
    grounds_for,
    review_by,
    review_covers,
    review_entry,
    review_text,
)
from apps.audit.services import audit_record
from apps.core.errors import ApplicationError
from apps.engine.masking import kept_characters
from apps.engine.released_columns import released_column_exposure

SINGLES_OUT_KINDS = ("small_cells", "uniques", "risk")
ROLE_WORDS = {"other": "other", "direct": "direct identifier", "": "not classified"}
_HOW = {"mask": "character-masked", "scrub": "scrubbed"}


def measured_columns(
    names: list[str],
    *,
    quasi: list[str],
    sensitive: list[str],
    masking: dict[str, Any],
    free_text: list[str],
) -> list[str]:
    """The released columns measured as quasi-identifiers would be (module docstring):
    pseudonyms and ciphertext (`OPAQUE_METHODS`) are values no intruder can compute. A
    scrubbed column that is not free text (a name or code column scrubbed) is measured: what
    the detectors did not recognize in it is released as it was."""

    def method(c: str) -> str:
        return str((masking.get(c) or {}).get("method") or "")

    return [
        c
        for c in names
        if c not in quasi
        and c not in sensitive
        and method(c) not in OPAQUE_METHODS
        and not (method(c) == "scrub" and c in free_text)
    ]


def masking_kept_query(original: pl.LazyFrame, masked: dict[str, Any]) -> pl.LazyFrame:
    """One streaming aggregate over the original values: for each character-masked column
    ``i``, the most characters kept of a value (``most{i}``) and the mean share of a value's
    characters kept (``share{i}``)."""
    exprs = []
    for i, (column, spec) in enumerate(masked.items()):
        text = pl.col(column).cast(pl.String)
        lead, trail = kept_characters(
            text, int(spec.get("keep_leading") or 0), int(spec.get("keep_trailing") or 0)
        )
        kept = lead + trail
        length = text.str.len_chars()
        exprs += [
            kept.max().alias(f"most{i}"),
            (kept / length).filter(length > 0).mean().alias(f"share{i}"),
        ]
    return original.select(exprs)


def masking_kept(original: pl.LazyFrame, masking: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What character masking kept of each masked column (`masking_kept_query`)."""
    masked = {c: s for c, s in masking.items() if s.get("method") == "mask"}
    if not masked:
        return {}
    found = masking_kept_query(original, masked).collect(engine="streaming").row(0, named=True)
    return {
        column: {
            "keep_leading": int(spec.get("keep_leading") or 0),
            "keep_trailing": int(spec.get("keep_trailing") or 0),
            "most_kept": int(found[f"most{i}"] or 0),
            "mean_share": float(found[f"share{i}"] or 0.0),
        }
        for i, (column, spec) in enumerate(masked.items())
    }


def release_columns_measure(
    original: pl.LazyFrame,
    released: pl.LazyFrame,
    *,
    quasi: list[str],
    sensitive: list[str],
    masking: dict[str, Any],
    roles: dict[str, str],
    free_text: list[str],
    release_size: int,
    release_model: str,
    data_risk_target: float,
) -> dict[str, Any]:
    """The apply job's measure of the released columns (stored in ``released_columns``).
    ``released`` is the written file scanned: every figure streams (module docstring of
    `apps.engine.released_columns`)."""
    names = released.collect_schema().names()
    present = [s for s in sensitive if s in names]
    columns = measured_columns(
        names, quasi=quasi, sensitive=present, masking=masking, free_text=free_text
    )
    masked = [c for c in columns if (masking.get(c) or {}).get("method") == "mask"]
    report = released_column_exposure(
        released,
        quasi=[q for q in quasi if q in names],
        columns=columns,
        sensitive=present,
        release_size=release_size,
        release_model=release_model,
        examples=masked,
    )
    kept = masking_kept(original, {c: masking[c] for c in masked})
    measured = report.to_dict()
    measured["columns"] = [
        {
            **column.to_dict(),
            "role": roles.get(column.column, ""),
            "method": (masking.get(column.column) or {}).get("method", ""),
            "kept": kept.get(column.column),
            # only what a masking kept is shown (values of k records or more)
            "examples": [[v, n] for v, n in column.examples] if column.column in kept else [],
        }
        for column in report.columns
    ]
    return {
        **measured,
        "release_model": release_model,
        "data_risk_target": data_risk_target,
        "measured": columns,
    }


# --------------------------------------------------------------------------- findings


def _n(value: int) -> str:
    return f"{value:,}"


def _finding_lines(
    entry: dict[str, Any], *, k: int, target: float, without: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """(kinds, sentences) of one measured column's findings."""
    kinds, lines = [], []
    with_column = entry["with_column"]
    if entry["small_values"]:
        kinds.append("small_cells")
        lines.append(
            f"{_n(entry['small_values'])} of its {_n(entry['values'])} values "
            f"{'is' if entry['small_values'] == 1 else 'are'} held by fewer than {k} records "
            f"({_n(entry['small_records'])} records in all)"
        )
    if with_column["uniques"] > without["uniques"]:
        kinds.append("uniques")
        lines.append(
            f"added to the quasi-identifiers it leaves {_n(with_column['uniques'])} records "
            f"alone in their class ({_n(without['uniques'])} without it)"
        )
    risk = float(with_column["data_risk"])
    if risk > target + 1e-12 and risk > float(without["data_risk"]) + 1e-12:
        kinds.append("risk")
        lines.append(
            f"the data risk with it is {risk:.3g}, above the target {target:.3g} "
            f"({_n(with_column['below_k'])} records in classes under {k})"
        )
    for link in entry.get("links") or []:
        if link["predicts"]:
            kinds.append(f"predicts:{link['sensitive']}")
            lines.append(
                f"grouped with it, {_n(link['classes'])} classes of 2 or more records "
                f"({_n(link['records'])} records) all share one value of the sensitive "
                f"{link['sensitive']} ({_n(link['classes_without'])} without it)"
            )
    return kinds, lines


def column_findings(
    apply_result: dict[str, Any] | None, config: DeidConfig | None
) -> list[dict[str, Any]]:
    """Measured released columns with findings, each with its kinds, the findings in words,
    whether it can be explained (``hard``: a masked identifier that singles people out
    cannot), the grounds offered and the analyst's explanation if it answers them all."""
    measured = (apply_result or {}).get("released_columns")
    if not measured:
        return []
    reviewed = config.columns_reviewed if config is not None else {}
    k = int(measured["release_size"])
    out = []
    for entry in measured["columns"]:
        kinds, lines = _finding_lines(
            entry,
            k=k,
            target=float(measured["data_risk_target"]),
            without=measured["without"],
        )
        if not kinds:
            continue
        # a direct identifier released character-masked, or scrubbed where the detectors
        # found nothing to replace
        masked = entry.get("method") in ("mask", "scrub")
        hard = masked and any(kind in SINGLES_OUT_KINDS for kind in kinds)
        review = reviewed.get(entry["column"])
        covered = not hard and review_covers(review, kinds)
        out.append(
            {
                "column": entry["column"],
                "role": entry.get("role", ""),
                "role_words": ROLE_WORDS.get(entry.get("role", ""), entry.get("role", "")),
                "masked": masked,
                "method": entry.get("method", ""),
                "kinds": kinds,
                "findings": lines,
                "in_words": "; ".join(lines),
                "hard": hard,
                "grounds": [] if hard else [(g.key, g.text) for g in grounds_for(kinds)],
                "reviewed": review_text(review) if covered else "",
                "reviewed_by": review_by(review) if covered else "",
            }
        )
    return out


def masked_columns(apply_result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every character-masked column of the release with what was kept, for the reviewer."""
    measured = (apply_result or {}).get("released_columns") or {}
    return [c for c in measured.get("columns") or [] if c.get("kept")]


def column_blockers(apply_result: dict[str, Any] | None, config: DeidConfig | None) -> list[str]:
    """The submission blockers: one per measured column with findings not treated or
    explained."""
    if not apply_result:
        return []
    if "released_columns" not in apply_result:
        return [
            "The de-identified file was written before its released columns other than the "
            "quasi-identifiers were measured: write it again (Step 7)."
        ]
    blockers = []
    for finding in column_findings(apply_result, config):
        column = finding["column"]
        if finding["hard"]:
            blockers.append(
                f"The direct identifier '{column}' is released "
                f"{_HOW.get(finding['method'], 'in part')} and its values single people out: "
                f"{finding['in_words']}. A direct identifier is known to whoever knows the "
                "person, so no explanation lifts this: in Step 7 "
                f"{'keep fewer characters, ' if finding['method'] == 'mask' else ''}"
                "pseudonymize or remove it, or classify it as a quasi-identifier in Step 2 and "
                "generalize it."
            )
        elif not finding["reviewed"]:
            blockers.append(
                f"Column '{column}' ({finding['role_words']}) is released as it is, and measured "
                f"as a quasi-identifier would be, {finding['in_words']}. Classify it in Step 2 as "
                "a quasi-identifier (generalized), a direct identifier (removed) or a sensitive "
                "variable, or explain under “Other released columns, measured” (Step 7) why it "
                "does not expose anyone, naming what was found or choosing one of the grounds "
                "offered."
            )
    return blockers


@transaction.atomic
def columns_reviewed_set(
    *, assessment: Assessment, user: User, column: str, reason: str, ground: str = ""
) -> None:
    """Record the analyst's explanation of a measured column's findings (a sentence naming
    them, or one of the grounds offered). An empty reason and no ground withdraws it.
    Audited; the reviewer sees it beside the findings."""
    if not membership_get(user=user, organization=assessment.organization).can_edit:
        raise ApplicationError(
            "Only analysts and administrators explain what was found in released columns.",
            status=403,
        )
    assessment_editable(assessment)
    locked = Assessment.objects.select_for_update().get(id=assessment.id)
    findings = {f["column"]: f for f in column_findings(locked.apply_result, locked.deid)}
    finding = findings.get(column)
    if finding is None:
        raise ApplicationError(
            f"Nothing was found in the released column '{column}'.", {"column": column}
        )
    if finding["hard"]:
        raise ApplicationError(
            f"The direct identifier '{column}' is released "
            f"{_HOW.get(finding['method'], 'in part')} and its values single people out; a "
            "direct identifier is known to whoever knows the person, so this cannot be "
            "explained away: pseudonymize or remove it (Step 7).",
            {"column": column},
        )
    config = locked.deid
    reviewed = dict(config.columns_reviewed)
    entry: dict[str, Any] | None = None
    if reason.strip() or ground:
        entry = review_entry(
            column=column,
            kinds=finding["kinds"],
            reason=reason,
            ground=ground,
            by=user.get_username(),
        )
        reviewed[column] = entry
    else:
        reviewed.pop(column, None)
    locked.deid_config = config.replace(columns_reviewed=reviewed).to_json()
    locked.save(update_fields=["deid_config", "updated_at"])
    assessment.deid_config = locked.deid_config
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="assessment.columns_reviewed",
        obj=assessment,
        details={
            "column": column,
            "reason": entry["reason"] if entry else "",
            "ground": entry["ground"] if entry else "",
            "findings": finding["kinds"],
        },
    )
