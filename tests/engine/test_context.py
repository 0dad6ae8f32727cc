from __future__ import annotations

import pytest

from apps.engine.context import (
    CONTROLS,
    DEFAULT_BREACH_SOURCE,
    acquaintance_recognition,
    context_risk,
    controls_level,
    data_breach,
    data_risk_target,
    insider_attack,
    motives_level,
    overall_risk,
)
from apps.engine.errors import EngineInputError

# Seed 000 step 5 and PDPC 17.8, typed from the documents: controls → (low, medium, high motives).
ONTARIO = {"high": (0.05, 0.1, 0.2), "medium": (0.2, 0.3, 0.4), "low": (0.4, 0.5, 0.6)}
PDPC = {
    "high": (0.03, 0.05, 0.1),
    "medium": (0.2, 0.25, 0.3),
    "low": (0.4, 0.5, 0.6),
    "none": (1.0, 1.0, 1.0),
}


@pytest.mark.parametrize(("profile", "table"), [("ontario_ipc_2016", ONTARIO), ("pdpc_2018", PDPC)])
def test_insider_attack_tables(profile: str, table: dict[str, tuple[float, ...]]) -> None:
    for controls, row in table.items():
        for motives, expected in zip(("low", "medium", "high"), row, strict=True):
            t1 = insider_attack(controls, motives, profile=profile)
            assert t1.probability == expected
            assert t1.profile == profile and t1.source


def test_insider_attack_rejects_unknown_levels() -> None:
    with pytest.raises(EngineInputError, match="controls level 'none'"):
        insider_attack("none", "low")  # the Ontario table has no 'none' row
    with pytest.raises(EngineInputError, match="motives"):
        insider_attack("high", "extreme")


def test_acquaintance_formula_by_hand() -> None:
    # p = 0.01, m = 150: 0.99^150 = exp(150 · ln 0.99) = exp(-1.5075504)
    #   = e^-1.5 · e^-0.0075504 = 0.2231302 · 0.9924780 = 0.2214518 → 0.7785482
    t2 = acquaintance_recognition(0.01)
    assert t2.probability == pytest.approx(0.7785482, abs=1e-6)
    assert t2.effective_acquaintances == 150
    # single-sex condition: m = 75, 0.99^75 = exp(-0.7537752)
    #   = e^-0.75 · e^-0.0037752 = 0.4723666 · 0.9962319 = 0.4705866 → 0.5294134
    assert acquaintance_recognition(0.01, single_sex=True).probability == pytest.approx(
        0.5294134, abs=1e-6
    )
    # p = 0.001, m = 190: 0.999^190 = exp(190 · ln 0.999) = exp(-0.1900951) = 0.8268805 → 0.1731195
    assert acquaintance_recognition(0.001, acquaintances=190).probability == pytest.approx(
        0.1731195, abs=1e-6
    )
    assert acquaintance_recognition(0.0).probability == 0.0
    assert acquaintance_recognition(1.0).probability == 1.0


def test_acquaintance_validation() -> None:
    for p in (-0.1, 1.1):
        with pytest.raises(EngineInputError, match=r"\[0, 1\]"):
            acquaintance_recognition(p)
    for m in (149, 191):
        with pytest.raises(EngineInputError, match="150-190"):
            acquaintance_recognition(0.1, acquaintances=m)


def test_breach_default_and_custom() -> None:
    t3 = data_breach()
    assert t3.rate == 0.27 and t3.source == DEFAULT_BREACH_SOURCE and "27%" in t3.source
    assert data_breach(0.1, "Sector report 2024").source == "Sector report 2024"
    with pytest.raises(EngineInputError, match="needs a source"):
        data_breach(0.1)


def test_context_risk_by_release_model() -> None:
    public = context_risk("public")
    assert (public.value, public.deciding_attack, public.insider) == (1.0, "public", None)

    # non-public: T1 = 0.1 (high controls, medium motives), T2(0.001, 150) = 0.1393, T3 = 0.27
    non_public = context_risk("non_public", controls="high", motives="medium", prevalence=0.001)
    assert non_public.value == 0.27 and non_public.deciding_attack == "T3"
    assert non_public.acquaintance is not None
    assert non_public.acquaintance.probability == pytest.approx(1 - 0.999**150)

    semi = context_risk("semi_public", controls="high", motives="low", prevalence=0.001)
    assert semi.insider is not None and semi.insider.fixed_for_semi_public
    assert (semi.insider.controls, semi.insider.motives, semi.value) == ("low", "high", 0.6)

    t2_wins = context_risk("non_public", controls="high", motives="low", prevalence=0.01)
    assert t2_wins.deciding_attack == "T2" and t2_wins.value == pytest.approx(0.7785482, abs=1e-6)


def test_context_risk_needs_its_inputs() -> None:
    with pytest.raises(EngineInputError, match="controls and motives"):
        context_risk("non_public", prevalence=0.01)
    with pytest.raises(EngineInputError, match="prevalence"):
        context_risk("non_public", controls="high", motives="low")


def test_overall_risk_and_target() -> None:
    # Seed 000 step 6: data risk 0.2 × context risk 0.5 = 0.1
    result = overall_risk(0.2, 0.5, 0.1)
    assert result.value == pytest.approx(0.1) and result.passes
    # Seed 001: Pr(attempt) = 0.3 with a threshold of 0.1 → data-risk target 0.1/0.3 = 0.33
    assert data_risk_target(0.1, 0.3) == pytest.approx(1 / 3)
    assert data_risk_target(0.1, 1.0) == 0.1  # public
    assert data_risk_target(0.5, 0.27) == 1.0  # capped at 1
    assert overall_risk(1 / 3, 0.3, 0.1).passes  # 0.0999… within the tolerance
    assert not overall_risk(0.5, 0.3, 0.1).passes  # 0.15 > 0.1


# --------------------------------------------------------------------------- questionnaires


def test_controls_questionnaire() -> None:
    keys = [key for key, _ in CONTROLS]
    assert len(keys) == 11
    all_yes = controls_level(dict.fromkeys(keys, "yes"))
    assert (all_yes.level, all_yes.points, all_yes.maximum) == ("high", 22, 22)
    # 9 yes + 2 no = 18/22 = 81.8% → high; 8 yes + 3 no = 16/22 = 72.7% → medium
    assert controls_level({k: "yes" for k in keys[:9]}).level == "high"
    assert controls_level({k: "yes" for k in keys[:8]}).level == "medium"
    # 11 partial = 11/22 = 50% → medium; 10 partial = 45% → low
    assert controls_level(dict.fromkeys(keys, "partial")).level == "medium"
    assert controls_level(dict.fromkeys(keys[:10], "partial")).level == "low"
    assert controls_level({}).level == "low"
    assert controls_level({}, profile="pdpc_2018").level == "none"
    with pytest.raises(EngineInputError):
        controls_level({"need_to_know": "maybe"})


def test_motives_questionnaire() -> None:
    calm = {
        "past_without_incident": "yes",
        "reasons_to_reidentify": "no",
        "expertise_and_resources": "partial",
        "linkable_data": "partial",
    }
    assert (motives_level(calm).level, motives_level(calm).points) == ("low", 2)
    assert motives_level(calm | {"linkable_data": "yes"}).level == "medium"  # 3
    assert motives_level({}).points == 8 and motives_level({}).level == "high"
    with pytest.raises(EngineInputError):
        motives_level({"reasons_to_reidentify": "perhaps"})
