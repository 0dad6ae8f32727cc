from __future__ import annotations

import json

import pytest

from apps.engine.errors import EngineInputError
from apps.engine.threshold import (
    PROFILES,
    custom_threshold,
    get_profile,
    invasion_of_privacy,
    preset_threshold,
    register_profile,
    threshold_for,
)


@pytest.mark.parametrize(
    ("profile", "level", "value"),
    [
        ("ontario_ipc_2016", "low", 0.1),
        ("ontario_ipc_2016", "medium", 0.075),
        ("ontario_ipc_2016", "high", 0.05),
        ("pdpc_2018", "low", 0.2),
        ("pdpc_2018", "medium", 0.1),
        ("pdpc_2018", "high", 0.01),
        ("el_emam_2013", "low", 0.09),
        ("el_emam_2013", "high", 0.05),
    ],
)
def test_profile_thresholds(profile: str, level: str, value: float) -> None:
    threshold = threshold_for(level, profile)
    assert threshold.value == value
    assert threshold.origin == "profile" and threshold.profile == profile
    assert threshold.source  # every figure carries its source


def test_default_profile_is_ontario_with_cell_sizes() -> None:
    assert threshold_for("low").profile == "ontario_ipc_2016"
    assert [threshold_for(lv).cell_size_equivalent for lv in ("low", "medium", "high")] == [
        10,
        15,
        20,
    ]
    assert threshold_for("medium").minimum_class_size == 14  # 1/14 ≈ 0.0714 ≤ 0.075
    assert threshold_for("high").minimum_class_size == 20


def test_presets() -> None:
    open_data = preset_threshold("open_data_k11")
    assert open_data.value == pytest.approx(1 / 11) and open_data.minimum_class_size == 11
    assert preset_threshold("clinical_trial_public").value == 0.09
    with pytest.raises(EngineInputError, match="unknown threshold preset"):
        preset_threshold("nope")


def test_custom_threshold_needs_justification_and_range() -> None:
    chosen = custom_threshold(0.2, "  agreed with the custodian  ")
    assert (chosen.value, chosen.origin, chosen.justification) == (
        0.2,
        "custom",
        "agreed with the custodian",
    )
    for justification in (None, "", "   "):
        with pytest.raises(EngineInputError, match="justification"):
            custom_threshold(0.2, justification)
    for value in (0.0, -0.1, 1.5):
        with pytest.raises(EngineInputError, match=r"\(0, 1\]"):
            custom_threshold(value, "reason")
    assert custom_threshold(1.0, "reason").value == 1.0


def test_unknown_level_and_profile() -> None:
    with pytest.raises(EngineInputError, match="low, medium or high"):
        threshold_for("extreme")
    with pytest.raises(EngineInputError, match="unknown profile"):
        threshold_for("low", "atlantis")


def test_a_new_edition_is_added_as_data() -> None:
    edition = {
        "name": "Ontario IPC (2025, test figures)",
        "source": "IPC 2025",
        "thresholds": {"low": 0.09, "medium": 0.06, "high": 0.04},
        "threshold_source": "IPC 2025 table",
        "insider_attack": {"high": {"low": 0.1, "medium": 0.2, "high": 0.3}},
        "insider_attack_source": "IPC 2025",
        "semi_public_insider": {"controls": "high", "motives": "high"},
    }
    try:
        register_profile("ipc_2025_test", json.dumps(edition))
        assert threshold_for("medium", "ipc_2025_test").value == 0.06
        assert get_profile("ipc_2025_test").insider_attack["high"]["high"] == 0.3
    finally:
        PROFILES.pop("ipc_2025_test", None)


def test_a_bad_profile_is_rejected() -> None:
    with pytest.raises(EngineInputError, match="incomplete"):
        register_profile("broken", {"name": "x"})
    bad = dict(PROFILES["ontario_ipc_2016"], thresholds={"low": 2, "medium": 0.1, "high": 0.05})
    with pytest.raises(EngineInputError, match=r"\(0, 1\]"):
        register_profile("broken", bad)
    assert "broken" not in PROFILES


# --------------------------------------------------------------------------- questionnaire


def test_invasion_all_least_invasive_is_low() -> None:
    answers = {
        "sensitivity": "low",
        "detail": "low",
        "individuals": "few",
        "harm": "low",
        "permitted_without_consent": "yes",
        "freely_given": "yes",
        "consent_or_notice": "yes",
    }
    result = invasion_of_privacy(answers)
    assert (result.level, result.total, result.maximum) == ("low", 0, 14)
    assert "0/14" in result.explanation and result.rule


def test_invasion_thresholds_on_the_sum() -> None:
    # 1+1+1+1+0+0+0 = 4 → low;  1+1+1+1+1+0+0 = 5 → medium;  2·5 + 0 = 10 → high
    four = {"sensitivity": 1, "detail": 1, "individuals": 1, "harm": 1}
    rest = {"permitted_without_consent": 0, "freely_given": 0, "consent_or_notice": 0}
    assert invasion_of_privacy({**four, **rest}).level == "low"
    assert invasion_of_privacy({**four, **rest, "freely_given": 1}).level == "medium"
    ten = {
        "sensitivity": 2,
        "detail": 2,
        "individuals": 2,
        "harm": 2,
        "permitted_without_consent": 2,
    }
    result = invasion_of_privacy({**ten, "freely_given": 0, "consent_or_notice": 0})
    assert (result.level, result.total) == ("high", 10)


def test_invasion_high_sensitivity_is_at_least_medium() -> None:
    # total 2 would be low, but sensitivity scored 2 raises it
    answers = {"sensitivity": "high", "detail": 0, "individuals": 0, "harm": 0}
    answers |= {"permitted_without_consent": 0, "freely_given": 0, "consent_or_notice": 0}
    result = invasion_of_privacy(answers)
    assert (result.level, result.total) == ("medium", 2)
    assert "raised" in result.explanation


def test_invasion_unanswered_counts_as_most_invasive() -> None:
    result = invasion_of_privacy({})
    assert (result.level, result.total) == ("high", 14)
    assert all(s.answer is None and s.score == 2 for s in result.scores)


def test_invasion_bad_answers() -> None:
    with pytest.raises(EngineInputError, match="not one of"):
        invasion_of_privacy({"sensitivity": "enormous"})
    with pytest.raises(EngineInputError, match="unknown invasion"):
        invasion_of_privacy({"colour": "red"})
