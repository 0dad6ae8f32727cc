"""Risk threshold (Step 3): invasion of privacy → threshold, by jurisdiction profile.

Profiles are plain data (JSON-like dicts in PROFILES, or loaded with
`register_profile`), so a new edition such as the IPC's 12-step 2025 guidelines is
added as data, without code changes.  Each profile carries its sources, its
thresholds per invasion-of-privacy level and its insider-attack (T1) table, which
context.py reads.

The invasion-of-privacy questionnaire rule is the product's own (seed 000 step 3
lists the factors but leaves the scoring to the assessor); it is shown to the user
with every score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from apps.engine.errors import EngineInputError

LEVELS = ("low", "medium", "high")
DEFAULT_PROFILE = "ontario_ipc_2016"

_IPC_2016 = (
    "Information and Privacy Commissioner of Ontario, De-identification Guidelines for "
    "Structured Data (June 2016)"
)
_PDPC_2018 = "Personal Data Protection Commission Singapore, Guide to Basic Data Anonymisation Techniques (25 January 2018)"
_EL_EMAM_2013 = "El Emam & Arbuckle, Anonymizing Health Data (O'Reilly 2013), ch. 2"

_IPC_T1: dict[str, dict[str, float]] = {
    "high": {"low": 0.05, "medium": 0.1, "high": 0.2},
    "medium": {"low": 0.2, "medium": 0.3, "high": 0.4},
    "low": {"low": 0.4, "medium": 0.5, "high": 0.6},
}

# Rows: extent of privacy and security controls; columns: motives and capacity.
PROFILES: dict[str, dict[str, Any]] = {
    "ontario_ipc_2016": {
        "name": "Ontario IPC (2016)",
        "source": _IPC_2016,
        "thresholds": {"low": 0.1, "medium": 0.075, "high": 0.05},
        # The IPC's illustrative cell sizes (15 for 0.075 is rounded: 1/14 would do).
        "cell_sizes": {"low": 10, "medium": 15, "high": 20},
        "threshold_source": f"{_IPC_2016}, step 3 (table of thresholds by invasion of privacy)",
        "insider_attack": _IPC_T1,
        "insider_attack_source": f"{_IPC_2016}, step 5, attack 1 (deliberate insider attack)",
        "semi_public_insider": {"controls": "low", "motives": "high"},
    },
    "pdpc_2018": {
        "name": "Singapore PDPC (2018)",
        "source": _PDPC_2018,
        # PDPC grades by potential harm rather than invasion of privacy; same three levels.
        "thresholds": {"low": 0.2, "medium": 0.1, "high": 0.01},
        "threshold_source": f"{_PDPC_2018}, 17.3 (example thresholds by potential harm)",
        "insider_attack": {
            "high": {"low": 0.03, "medium": 0.05, "high": 0.1},
            "medium": {"low": 0.2, "medium": 0.25, "high": 0.3},
            "low": {"low": 0.4, "medium": 0.5, "high": 0.6},
            "none": {"low": 1.0, "medium": 1.0, "high": 1.0},
        },
        "insider_attack_source": f"{_PDPC_2018}, 17.8 (scenario 1, deliberate insider attack)",
        "semi_public_insider": {"controls": "low", "motives": "high"},
    },
    "el_emam_2013": {
        "name": "El Emam (2013)",
        "source": _EL_EMAM_2013,
        # The chapter gives the 0.09-0.05 range of public precedents; the product takes
        # its ends for low and high invasion and the midpoint for medium.
        "thresholds": {"low": 0.09, "medium": 0.07, "high": 0.05},
        "threshold_source": f"{_EL_EMAM_2013}: public release precedents range 0.09 to 0.05",
        "insider_attack": _IPC_T1,
        "insider_attack_source": f"{_IPC_2016}, step 5 (from El Emam's scheme)",
        "semi_public_insider": {"controls": "low", "motives": "high"},
    },
}

# Single-value presets offered beside the profiles (METHOD step 3, "other presets").
PRESETS: dict[str, dict[str, Any]] = {
    "open_data_k11": {
        "name": "Open data, k ≥ 11",
        "value": 1 / 11,
        "source": "El Emam, A de-identification protocol for open data (k ≥ 11, as CMS), step 3",
    },
    "el_emam_public_low": {
        "name": "El Emam public range, least strict",
        "value": 0.09,
        "source": f"{_EL_EMAM_2013}: public release precedents 0.09 to 0.05",
    },
    "el_emam_public_high": {
        "name": "El Emam public range, strictest",
        "value": 0.05,
        "source": f"{_EL_EMAM_2013}: public release precedents 0.09 to 0.05",
    },
    "clinical_trial_public": {
        "name": "Public release of clinical-trial data",
        "value": 0.09,
        "source": "EMA Policy 0070 and Health Canada PRCI guidance, as reported in secondary sources",
    },
}


# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class Profile:
    """A validated jurisdiction profile (read-only view of its data)."""

    key: str
    name: str
    source: str
    thresholds: Mapping[str, float]
    cell_sizes: Mapping[str, int]
    threshold_source: str
    insider_attack: Mapping[str, Mapping[str, float]]
    insider_attack_source: str
    semi_public_insider: Mapping[str, str]

    @property
    def controls_levels(self) -> tuple[str, ...]:
        return tuple(self.insider_attack)


def _probability(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise EngineInputError(f"{what} must be a number in (0, 1], not {value!r}")
    return float(value)


def profile_from_data(key: str, data: Mapping[str, Any]) -> Profile:
    """Validate a profile given as data (dict or parsed JSON)."""
    try:
        thresholds = {
            lv: _probability(data["thresholds"][lv], f"{key} threshold {lv}") for lv in LEVELS
        }
        table = {
            controls: {m: _probability(row[m], f"{key} T1[{controls}][{m}]") for m in LEVELS}
            for controls, row in data["insider_attack"].items()
        }
        semi = dict(data.get("semi_public_insider", {"controls": "low", "motives": "high"}))
        profile = Profile(
            key=key,
            name=str(data["name"]),
            source=str(data["source"]),
            thresholds=MappingProxyType(thresholds),
            cell_sizes=MappingProxyType({k: int(v) for k, v in data.get("cell_sizes", {}).items()}),
            threshold_source=str(data["threshold_source"]),
            insider_attack=MappingProxyType({c: MappingProxyType(r) for c, r in table.items()}),
            insider_attack_source=str(data["insider_attack_source"]),
            semi_public_insider=MappingProxyType(semi),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise EngineInputError(f"profile {key!r} is incomplete: missing or bad {exc}") from exc
    if semi.get("controls") not in table or semi.get("motives") not in LEVELS:
        raise EngineInputError(
            f"profile {key!r}: semi_public_insider names no cell of its T1 table"
        )
    return profile


def register_profile(key: str, data: Mapping[str, Any] | str) -> Profile:
    """Add (or replace) a profile from a dict or a JSON text, after validation."""
    raw: Mapping[str, Any] = json.loads(data) if isinstance(data, str) else data
    profile = profile_from_data(key, raw)
    PROFILES[key] = dict(raw)
    return profile


def get_profile(key: str = DEFAULT_PROFILE) -> Profile:
    if key not in PROFILES:
        raise EngineInputError(f"unknown profile {key!r}: use one of {', '.join(PROFILES)}")
    return profile_from_data(key, PROFILES[key])


# --------------------------------------------------------------------------- thresholds


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

    @property
    def minimum_class_size(self) -> int:
        """Smallest k with 1/k ≤ value: the class size that meets the threshold as max risk."""
        return math.ceil(1 / self.value - 1e-9)


def threshold_for(invasion_of_privacy: str, profile: str = DEFAULT_PROFILE) -> RiskThreshold:
    """Threshold for a low / medium / high invasion of privacy under a profile."""
    if invasion_of_privacy not in LEVELS:
        raise EngineInputError(
            f"invasion of privacy must be low, medium or high, not {invasion_of_privacy!r}"
        )
    chosen = get_profile(profile)
    return RiskThreshold(
        value=chosen.thresholds[invasion_of_privacy],
        origin="profile",
        source=chosen.threshold_source,
        profile=chosen.key,
        invasion_of_privacy=invasion_of_privacy,
        cell_size_equivalent=chosen.cell_sizes.get(invasion_of_privacy),
    )


def preset_threshold(key: str) -> RiskThreshold:
    if key not in PRESETS:
        raise EngineInputError(f"unknown threshold preset {key!r}: use one of {', '.join(PRESETS)}")
    preset = PRESETS[key]
    return RiskThreshold(
        value=float(preset["value"]), origin="preset", source=str(preset["source"])
    )


def custom_threshold(value: float, justification: str | None) -> RiskThreshold:
    """A threshold set by hand: needs a written justification, which goes in the report."""
    if not justification or not justification.strip():
        raise EngineInputError("a custom threshold needs a written justification")
    checked = _probability(value, "a custom threshold")
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


# --------------------------------------------------------------------------- questionnaire

# (key, question, answers from least to most invasive): seed 000 step 3's seven factors.
INVASION_FACTORS: tuple[tuple[str, str, tuple[str, str, str]], ...] = (
    ("sensitivity", "How sensitive is the information?", ("low", "moderate", "high")),
    (
        "detail",
        "How detailed is the information (scope, granularity)?",
        ("low", "moderate", "high"),
    ),
    ("individuals", "How many individuals does it concern?", ("few", "many", "very many")),
    (
        "harm",
        "How serious would harm or injury be after a breach or misuse?",
        ("low", "moderate", "high"),
    ),
    (
        "permitted_without_consent",
        "Is the disclosure permitted by FIPPA/MFIPPA without consent?",
        ("yes", "unclear", "no"),
    ),
    (
        "freely_given",
        "Was the information unsolicited or given freely, with little expectation of privacy?",
        ("yes", "partly", "no"),
    ),
    (
        "consent_or_notice",
        "Did individuals consent to, or were they told of, this de-identified secondary use?",
        ("yes", "partly", "no"),
    ),
)
INVASION_RULE = (
    "Each of the 7 factors scores 0, 1 or 2 (2 = more invasive; unanswered = 2). "
    "Total 0-4 → low, 5-9 → medium, 10-14 → high; a score of 2 on sensitivity or on "
    "harm makes the result at least medium."
)


@dataclass(frozen=True)
class FactorScore:
    factor: str
    question: str
    answer: str | None
    score: int


@dataclass(frozen=True)
class InvasionOfPrivacyAssessment:
    level: str
    total: int
    maximum: int
    scores: tuple[FactorScore, ...]
    rule: str
    explanation: str


def _factor_score(key: str, answers: tuple[str, str, str], given: object) -> tuple[str | None, int]:
    if given is None:
        return None, 2
    if isinstance(given, int) and not isinstance(given, bool) and 0 <= given <= 2:
        return answers[given], given
    if isinstance(given, str) and given in answers:
        return given, answers.index(given)
    raise EngineInputError(
        f"invasion-of-privacy factor {key!r}: answer {given!r} is not one of "
        f"{', '.join(answers)} (or 0, 1, 2)"
    )


def invasion_of_privacy(answers: Mapping[str, object]) -> InvasionOfPrivacyAssessment:
    """Score seed 000 step 3's seven factors into low / medium / high (rule: INVASION_RULE)."""
    unknown = sorted(set(answers) - {key for key, _, _ in INVASION_FACTORS})
    if unknown:
        raise EngineInputError(f"unknown invasion-of-privacy factor(s): {', '.join(unknown)}")
    scores = []
    for key, question, choices in INVASION_FACTORS:
        answer, score = _factor_score(key, choices, answers.get(key))
        scores.append(FactorScore(key, question, answer, score))
    total = sum(s.score for s in scores)
    level = "low" if total <= 4 else "medium" if total <= 9 else "high"
    raised = level == "low" and any(
        s.score == 2 for s in scores if s.factor in ("sensitivity", "harm")
    )
    if raised:
        level = "medium"
    parts = [
        f"{s.factor}={s.score}" + ("" if s.answer is not None else " (unanswered)") for s in scores
    ]
    explanation = f"total {total}/14 ({', '.join(parts)}) → {level}" + (
        " (raised from low: high sensitivity or harm)" if raised else ""
    )
    return InvasionOfPrivacyAssessment(
        level=level,
        total=total,
        maximum=14,
        scores=tuple(scores),
        rule=INVASION_RULE,
        explanation=explanation,
    )
