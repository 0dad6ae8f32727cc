"""A draft's threat model as its rows stand now: Step 2's quasi-identifiers and Step 7's
masking read live (``threat_model.py`` holds the rules, which read nothing)."""

from __future__ import annotations

from typing import Any

from apps.assessments.deidentify import deid_config
from apps.assessments.selectors import quasi_identifiers
from apps.assessments.threat_model import threat_model_of


def current_threat_model(assessment: Any) -> dict[str, Any]:
    """A draft's threat model from the live rows (Step 2's roles, Step 7's masking)."""
    return threat_model_of(
        assessment,
        quasi=quasi_identifiers(assessment),
        masking=deid_config(assessment).to_json().get("masking"),
    )
