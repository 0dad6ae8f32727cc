"""Which threshold profiles Step 3 offers, by release model, and what the record keeps of one.

A profile is data with its source (``apps.engine.threshold``): each names the release models
its values apply to and the risk measure they bound.  Step 3 offers only the profiles that set
a value for the assessment's release model (as handled: a non-public release without a data
sharing agreement counts as semi-public) — the EMA / Health Canada value of 0.09 is set for
the public release of clinical reports and for nothing else.  The page, the form, the API and
the service all read `offered_profiles`, so none of them can offer a profile the others refuse.

`profile_record` is what Step 3's result keeps of the chosen profile (name, edition, source,
the values for the release model and the measure they bound): the review snapshot and the
signed report print it from there, not from the profile files, which may change later.
"""

from __future__ import annotations

from typing import Any

from apps.engine import threshold as engine_threshold
from apps.engine.errors import EngineError

MEASURE_WORDS = {
    "max": "maximum risk",
    "average": "average risk (applied as the strict average)",
    "strict_average": "strict average risk",
}


def profile_record(key: str, release_model: str) -> dict[str, Any]:
    """The chosen profile as the record keeps it; raises EngineError when the profile is
    withheld, unknown, or sets no value for the release model."""
    profile = engine_threshold.get_profile(key)
    rule = profile.rule_for(release_model)
    return {
        "key": profile.key,
        "name": profile.name,
        "edition": profile.edition_version,
        "edition_date": profile.edition_date,
        "source": profile.source,
        "threshold_source": rule.source,
        "read_from": profile.read_from,
        "levels_graded_by": profile.levels_graded_by,
        "release_model": release_model,
        "measure": rule.measure,
        "measure_words": MEASURE_WORDS.get(rule.measure, rule.measure),
        "values": {level: rule.thresholds[level] for level in engine_threshold.LEVELS},
        "release_models": list(profile.release_models),
        "notes": profile.notes,
    }


def offered_profiles(release_model: str) -> list[dict[str, Any]]:
    """The profiles Step 3 offers for a release model, in the files' order; none before the
    release model is chosen (Step 1)."""
    if not release_model:
        return []
    offered = []
    for key in engine_threshold.PROFILES:
        try:
            offered.append(profile_record(key, release_model))
        except EngineError:
            continue
    return offered


def not_offered(release_model: str) -> list[dict[str, str]]:
    """The profiles left out for this release model, and why (withheld ones included)."""
    offered = {p["key"] for p in offered_profiles(release_model)}
    out = []
    for key in engine_threshold.PROFILES:
        if key in offered:
            continue
        profile = engine_threshold.get_profile(key)
        covers = ", ".join(m.replace("_", "-") for m in profile.release_models)
        out.append(
            {
                "key": key,
                "name": profile.name,
                "reason": f"sets values for {covers} releases only",
            }
        )
    for key, withheld in engine_threshold.WITHHELD.items():
        out.append({"key": key, "name": withheld.name, "reason": withheld.reason})
    return out
