"""Population uniqueness and attacker models in the wizard (issue #17).

The IPC's method measures the prosecutor's risk on the release itself (seed 000 step 4):
that stays the default and decides the release.  When the release is a sample of a
larger population (a survey, a research extract) a privacy officer may also state the
population's size; the Step 4 job and the Step 7 apply job then store the estimated
population uniques (Pitman, Zayatz, SNB, Dankar's rule) and, always, the prosecutor,
journalist and marketer figures, so pages and the Step 9 report read them, never
recompute them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments.drafts import assessment_editable
from apps.assessments.models import Assessment
from apps.assessments.services import risk_input_save
from apps.core.errors import ApplicationError
from apps.engine.errors import EngineError
from apps.engine.population import (
    ARX_DEFAULT_THRESHOLD,
    CURVE_FRACTIONS,
    REGIONS,
    SizeHistogram,
    attacker_models,
    get_region,
    population_uniqueness,
    uniqueness_curve,
)

NO_POPULATION = (
    "Not a sample: the release is taken as the whole population, and the prosecutor's risk "
    "above decides (IPC 2016, step 4)."
)


def region_choices() -> list[tuple[str, list[tuple[str, str]]]]:
    """Regions for a select, grouped: census counts first, ARX's presets for comparison."""
    groups = {"census": "Census counts", "arx": "ARX presets (to compare with ARX)"}
    return [
        (
            title,
            [
                (r.key, f"{r.name} — {r.size:,}" + (f" ({r.year})" if r.year else ""))
                for r in REGIONS
                if r.group == group
            ],
        )
        for group, title in groups.items()
    ]


def population_setting(assessment: Assessment) -> dict[str, Any] | None:
    """The stated population as {"size", "region" (its data, or None)}; None when not a sample."""
    chosen = assessment.population or {}
    if chosen.get("region"):
        try:
            region = get_region(str(chosen["region"]))
        except EngineError:
            return None  # a region since removed from the presets: treat as not set
        return {"size": region.size, "region": region.to_dict()}
    if chosen.get("size"):
        return {"size": int(chosen["size"]), "region": None}
    return None


@transaction.atomic
def assessment_set_population(
    *,
    assessment: Assessment,
    region: str = "",
    size: int | None = None,
    user: User | None = None,
) -> list[str]:
    """Step 4: state the population the release is a sample of (a preset region or a size),
    or neither (the default). A measured data risk becomes stale; returns the stale steps."""

    assessment_editable(assessment)
    if region:
        try:
            preset = get_region(region)
        except EngineError as exc:
            raise ApplicationError(str(exc)) from None
        value: dict[str, Any] = {"region": preset.key}
        people = preset.size
    elif size is not None:
        if size < 1:
            raise ApplicationError(f"The population size must be at least 1, not {size}.")
        value, people = {"size": int(size)}, int(size)
    else:
        value, people = {}, 0
    rows = assessment.dataset.rows
    if value and people < rows:
        raise ApplicationError(
            f"A population of {people:,} is smaller than the data set's {rows:,} records: the "
            "release cannot be a sample of it."
        )
    if value == (assessment.population or {}):
        return []
    return risk_input_save(
        assessment, field="population", value=value, action="assessment.population", user=user
    )


def population_figures(
    assessment: Assessment,
    class_size_counts: Sequence[tuple[int, int]],
    *,
    threshold: float | None,
    curve: bool = False,
) -> dict[str, Any]:
    """The attacker models of a release (always) and its population uniqueness (for a sample).

    Records at risk of the attacker models are counted against `threshold` (the data-risk
    target), or ARX's default 0.2 when there is none yet.  With `curve`, the estimates at
    ARX's sampling fractions and at the release's own, for the plot.
    """
    histogram = SizeHistogram.from_counts(class_size_counts)
    chosen = threshold if threshold is not None and 0 < threshold <= 1 else ARX_DEFAULT_THRESHOLD
    figures: dict[str, Any] = {
        "attacker_models": attacker_models(histogram, chosen).to_dict(),
        "population": None,
        "population_setting": dict(assessment.population or {}),
    }
    setting = population_setting(assessment)
    if setting is None:
        return figures
    try:
        estimate = population_uniqueness(histogram, setting["size"]).to_dict()
        estimate["region"] = setting["region"]
        if curve and histogram.rows:
            own = estimate["sampling_fraction"]
            fractions = sorted({*CURVE_FRACTIONS, own})
            estimate["curve"] = [
                {**point.to_dict(), "release": point.sampling_fraction == own}
                for point in uniqueness_curve(histogram, fractions)
            ]
    except EngineError as exc:
        raise ApplicationError(f"Population uniqueness: {exc}") from None
    figures["population"] = estimate
    return figures


def fraction_label(fraction: float) -> str:
    """A sampling fraction as a short percentage: 1e-7 → "0.00001%", 0.2 → "20%"."""
    percent = fraction * 100
    if percent <= 0:
        return "0%"
    digits = max(0, 1 - math.floor(math.log10(percent)))
    text = f"{percent:.{digits}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "%"
