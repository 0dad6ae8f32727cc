"""Rows of the report's Step 7 section (IPC 2016, step 7), read from the version's frozen
record: how each direct identifier was masked (7.1) and the generalization hierarchies with
the applied level marked (7.2). The search's rows (7.3) are ``solution_words``' own."""

from __future__ import annotations

from typing import Any

from apps.core.labels import label_for
from apps.reviews.snapshot import AssessmentRecord


def masking_rows(
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


def hierarchy_rows(record: AssessmentRecord) -> list[dict[str, Any]]:
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
