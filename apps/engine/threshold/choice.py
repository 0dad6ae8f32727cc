"""The threshold chosen in Step 3: from a profile, a preset or a custom value, then checked.

`threshold_for` reads a profile's table; with ``release_model`` it reads the values the
profile sets for that release model and says which risk measure they bound (a profile
that sets none for the model is refused, e.g. the EMA's public-release value for a
non-public release).  `release_threshold` refuses values that make no sense and flags
those outside the profile's range, which then need a written justification.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from apps.engine.errors import EngineInputError
from apps.engine.threshold.profiles import (
    DEFAULT_PROFILE,
    LEVELS,
    PRESETS,
    check_probability,
    get_profile,
)


@dataclass(frozen=True)
class RiskThreshold:
    """The threshold chosen in Step 3, with what it came from (for the report)."""

    value: float
    origin: str  # "profile", "preset" or "custom"
    source: str
    profile: str | None = None
    invasion_of_privacy: str | None = None
    justification: str | None = None

    cell_size_equivalent: int | None = None  # as printed in the profile's table, if any
    # With a release model: the model and the risk measure the value bounds (max,
    # average, strict_average); None when the threshold was read without a model.
    release_model: str | None = None
    measure: str | None = None

    @property
    def minimum_class_size(self) -> int:
        """Smallest k with 1/k ≤ value: the class size that meets the threshold as max risk."""
        return math.ceil(1 / self.value - 1e-9)


def threshold_for(
    invasion_of_privacy: str, profile: str = DEFAULT_PROFILE, *, release_model: str | None = None
) -> RiskThreshold:
    """Threshold for a low / medium / high invasion of privacy (or impact, or potential harm:
    the profile's ``levels_graded_by``) under a profile.

    With ``release_model``, the values the profile sets for that model and the measure they
    bound; refused when the profile sets none for it."""
    if invasion_of_privacy not in LEVELS:
        raise EngineInputError(
            f"invasion of privacy must be low, medium or high, not {invasion_of_privacy!r}"
        )
    chosen = get_profile(profile)
    if release_model is None:
        value, source, measure = (
            chosen.thresholds[invasion_of_privacy],
            chosen.threshold_source,
            None,
        )
    else:
        rule = chosen.rule_for(release_model)
        value, source, measure = rule.thresholds[invasion_of_privacy], rule.source, rule.measure
    return RiskThreshold(
        value=value,
        origin="profile",
        source=source,
        profile=chosen.key,
        invasion_of_privacy=invasion_of_privacy,
        cell_size_equivalent=chosen.cell_sizes.get(invasion_of_privacy),
        release_model=release_model,
        measure=measure,
    )


def preset_threshold(key: str) -> RiskThreshold:
    if key not in PRESETS:
        raise EngineInputError(f"unknown threshold preset {key!r}: use one of {', '.join(PRESETS)}")
    preset = PRESETS[key]
    return RiskThreshold(
        value=float(preset["value"]),
        origin="preset",
        source=str(preset["source"]),
        measure=str(preset.get("measure", "max")),
    )


def custom_threshold(value: float, justification: str | None) -> RiskThreshold:
    """A threshold set by hand: needs a written justification, which goes in the report."""
    if not justification or not justification.strip():
        raise EngineInputError("a custom threshold needs a written justification")
    checked = check_probability(value, "a custom threshold")
    return RiskThreshold(
        value=checked, origin="custom", source="custom", justification=justification.strip()
    )


# --------------------------------------------------------------------------- release limits

#: No release threshold above 0.5: a class of 2 records would no longer meet it, so unique
#: records could be released (seed 000 step 4: 0.5 is the loosest cut-off it allows).
MAX_RELEASE_THRESHOLD = 0.5
#: "At least a sentence": an override's justification must say something a reader can
#: check, not a word (issue #13); a subject, a verb and a reason take about this many words.
MIN_JUSTIFICATION_WORDS = 6


@dataclass(frozen=True)
class ReleaseThreshold:
    """A threshold accepted for a release, and whether it departs from the profile."""

    threshold: RiskThreshold
    profile_range: tuple[float, float]
    outside_profile_range: bool


def profile_range(profile: str = DEFAULT_PROFILE) -> tuple[float, float]:
    """The thresholds the profile's table allows, lowest to highest (IPC 2016: 0.05-0.1)."""
    values = get_profile(profile).thresholds.values()
    return min(values), max(values)


def is_a_sentence(text: str | None) -> bool:
    """Whether a justification reads as at least one sentence (MIN_JUSTIFICATION_WORDS words
    with letters in them)."""
    words = [w for w in (text or "").split() if any(c.isalpha() for c in w)]
    return len(words) >= MIN_JUSTIFICATION_WORDS


def release_threshold(
    chosen: RiskThreshold,
    *,
    profile: str = DEFAULT_PROFILE,
    rows: int | None = None,
    justification: str | None = None,
) -> ReleaseThreshold:
    """Check a threshold for a release: refuse one that makes no sense, and flag one outside
    the profile's range, which then needs a justification of at least a sentence.

    Refused, for a preset or custom value: above 0.5 (a class of 2 no longer meets it:
    unique records could be released); below 1/rows (no release of this data can meet it:
    even one class holding every record has risk 1/rows). A value from the profile's own
    table is the method's answer and is never refused here; Step 7 says when it cannot be
    met."""
    value = chosen.value
    low, high = profile_range(profile)
    if chosen.origin == "profile":
        return ReleaseThreshold(
            threshold=chosen, profile_range=(low, high), outside_profile_range=False
        )
    if value > MAX_RELEASE_THRESHOLD:
        raise EngineInputError(
            f"a threshold of {value:.4g} is above {MAX_RELEASE_THRESHOLD}: it would not even "
            "require records to be indistinguishable from one other record, so unique "
            "records could be released"
        )
    if rows and value < 1 / rows:
        raise EngineInputError(
            f"a threshold of {value:.4g} is below 1/{rows:,} = {1 / rows:.4g}: no release of "
            f"these {rows:,} records can meet it, since even a single class holding every "
            "record has a risk of 1/rows"
        )
    outside = not (low - 1e-12 <= value <= high + 1e-12)
    if outside and not is_a_sentence(justification):
        name = get_profile(profile).name
        raise EngineInputError(
            f"a threshold of {value:.4g} is outside the range {low:.4g}-{high:.4g} of the "
            f"{name} profile: explain why in at least one full sentence (it is shown to the "
            "reviewer as an override and printed in the report)"
        )
    return ReleaseThreshold(
        threshold=chosen, profile_range=(low, high), outside_profile_range=outside
    )
