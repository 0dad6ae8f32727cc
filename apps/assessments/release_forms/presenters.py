"""What the Step 7 page shows of the release form: the choice, the settings with their
defaults, the columns each setting may name."""

from __future__ import annotations

from typing import Any

from apps.assessments.hierarchies import class_threshold
from apps.assessments.models import Assessment
from apps.assessments.release_forms.config import FORM_TITLES, FORMS
from apps.assessments.release_forms.services import (
    NUMERIC_TYPES,
    release_form_of,
    synthetic_columns,
)
from apps.classification.models import Variable


def release_form_context(assessment: Assessment) -> dict[str, Any]:
    config = release_form_of(assessment)
    variables = list(
        Variable.objects.filter(dataset=assessment.dataset)
        .exclude(role="direct")
        .order_by("position")
        .values_list("name", "inferred_type")
    )
    columns, secret = synthetic_columns(assessment, config)
    return {
        "config": config,
        "forms": [(f, FORM_TITLES[f]) for f in FORMS],
        "columns": [name for name, _ in variables],
        "numeric": [name for name, kind in variables if kind in NUMERIC_TYPES],
        "synthetic_columns": columns,
        "secret": secret,
        "default_threshold": class_threshold(assessment),
    }


__all__ = ["release_form_context"]
