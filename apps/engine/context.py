"""Context risk (Step 5) and overall risk (Step 6).

Context risk is the probability that a re-identification attack is attempted.
Public release: 1 (a demonstration attack is assumed).  Non-public release: the
largest of T1 deliberate insider attack, T2 inadvertent recognition by an
acquaintance and T3 data breach (seed 000 step 5; PDPC 17.7-17.11; seed 001).
Semi-public: as non-public with T1 fixed at low controls × high motives.

Every function returns frozen dataclasses that carry each input, default and
source, so the Step 9 report can print the whole derivation.  The two
questionnaire rules are the product's own and are returned with their scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apps.engine.errors import EngineInputError
from apps.engine.risk import check_release_model
from apps.engine.threshold import DEFAULT_PROFILE, LEVELS, get_profile

DEFAULT_ACQUAINTANCES = 150  # Dunbar's number (seed 000 step 5, attack 2; seed 001 T2)
ACQUAINTANCES_RANGE = (150, 190)
DEFAULT_BREACH_RATE = 0.27
DEFAULT_BREACH_SOURCE = (
    "El Emam & Arbuckle, Anonymizing Health Data (2013), ch. 2, attack T3: about 27% of "
    "providers bound by the HIPAA Security Rule have a reportable breach each year "
    "(estimate at the time of writing, likely to change)"
)
ACQUAINTANCE_SOURCE = (
    "IPC 2016, step 5, attack 2 (inadvertent recognition by an acquaintance) and El Emam & "
    "Arbuckle (2013) ch. 2 T2: 1 - (1 - p)^m, m = 150 (Dunbar) to 190, halved when the "
    "condition concerns one sex"
)

# --------------------------------------------------------------------------- questionnaires

# Seed 000 step 5: privacy and security controls a data sharing agreement may impose.
CONTROLS: tuple[tuple[str, str], ...] = (
    ("need_to_know", "Only authorized staff access the data, on a need-to-know basis"),
    ("confidentiality_agreements", "All staff and subcontractors signed confidentiality pledges"),
    ("retention_and_disposal", "Data is disposed of after a set retention period"),
    ("no_third_party_disclosure", "No disclosure to third parties without controls or approval"),
    ("policies_enforced", "Privacy and security policies exist, are monitored and enforced"),
    ("training", "Mandatory, ongoing privacy and security training for everyone involved"),
    ("breach_protocol", "A breach protocol with immediate written notice to the custodian"),
    ("anti_malware", "Virus checking / anti-malware is in place"),
    ("audit_trail", "Access is logged: who, when and what"),
    ("encrypted_transmission", "Electronic transmission uses an encrypted protocol"),
    ("physical_security", "Computers and files are in physically secured rooms and cabinets"),
)
CONTROL_POINTS = {"yes": 2, "partial": 1, "no": 0}
CONTROLS_RULE = (
    "Each control scores yes = 2, partial = 1, no or unanswered = 0. Share of the maximum "
    "≥ 80% → high, ≥ 50% → medium, otherwise low; a profile with a 'none' row (PDPC) "
    "gives 'none' when no control is in place at all."
)

# Seed 000 step 5: motives and capacity; answers listed from least to most motivated.
MOTIVES: tuple[tuple[str, str, tuple[str, str, str]], ...] = (
    (
        "past_without_incident",
        "Has the recipient worked with you before without incident?",
        ("yes", "partial", "no"),
    ),
    (
        "reasons_to_reidentify",
        "Could the recipient gain (financially or otherwise) from re-identifying?",
        ("no", "partial", "yes"),
    ),
    (
        "expertise_and_resources",
        "Does the recipient have the expertise or money to attempt it?",
        ("no", "partial", "yes"),
    ),
    (
        "linkable_data",
        "Can the recipient access other data that could be linked to this one?",
        ("no", "partial", "yes"),
    ),
)
MOTIVES_RULE = (
    "Each question scores 0, 1 or 2 towards more motivation and capacity (unanswered = 2). "
    "Total 0-2 → low, 3-5 → medium, 6-8 → high."
)


@dataclass(frozen=True)
class QuestionnaireResult:
    level: str
    points: int
    maximum: int
    answers: tuple[tuple[str, str | None, int], ...]  # (question key, answer, points)
    rule: str
    explanation: str


def controls_level(
    answers: Mapping[str, str | None], *, profile: str = DEFAULT_PROFILE
) -> QuestionnaireResult:
    """Privacy and security controls → high / medium / low (or none), rule CONTROLS_RULE."""
    known = {key for key, _ in CONTROLS}
    _reject_unknown(answers, known, "control")
    scored = []
    for key, _ in CONTROLS:
        answer = answers.get(key)
        if answer is not None and answer not in CONTROL_POINTS:
            raise EngineInputError(f"control {key!r}: answer yes, partial or no, not {answer!r}")
        scored.append((key, answer, CONTROL_POINTS.get(answer or "no", 0)))
    points, maximum = sum(p for _, _, p in scored), 2 * len(CONTROLS)
    share = points / maximum
    level = "high" if share >= 0.8 else "medium" if share >= 0.5 else "low"
    if points == 0 and "none" in get_profile(profile).insider_attack:
        level = "none"
    explanation = f"{points}/{maximum} points ({share:.0%}) → {level} controls"
    return QuestionnaireResult(level, points, maximum, tuple(scored), CONTROLS_RULE, explanation)


def motives_level(answers: Mapping[str, str | None]) -> QuestionnaireResult:
    """Motives and capacity of the recipient → low / medium / high, rule MOTIVES_RULE."""
    _reject_unknown(answers, {key for key, _, _ in MOTIVES}, "motives question")
    scored = []
    for key, _, choices in MOTIVES:
        answer = answers.get(key)
        if answer is not None and answer not in choices:
            raise EngineInputError(
                f"motives question {key!r}: answer yes, partial or no, not {answer!r}"
            )
        scored.append((key, answer, 2 if answer is None else choices.index(answer)))
    points = sum(p for _, _, p in scored)
    level = "low" if points <= 2 else "medium" if points <= 5 else "high"
    explanation = f"{points}/8 points → {level} motives and capacity"
    return QuestionnaireResult(level, points, 8, tuple(scored), MOTIVES_RULE, explanation)


def _reject_unknown(answers: Mapping[str, object], known: set[str], what: str) -> None:
    unknown = sorted(set(answers) - known)
    if unknown:
        raise EngineInputError(f"unknown {what}(s): {', '.join(unknown)}")


# --------------------------------------------------------------------------- T1, T2, T3


@dataclass(frozen=True)
class InsiderAttack:
    """T1: deliberate attempt by the recipient, read from the profile's table."""

    controls: str
    motives: str
    probability: float
    profile: str
    source: str
    fixed_for_semi_public: bool = False


def insider_attack(controls: str, motives: str, *, profile: str = DEFAULT_PROFILE) -> InsiderAttack:
    """Look up T1 in the profile's controls × motives table (seed 000 step 5; PDPC 17.8)."""
    chosen = get_profile(profile)
    if controls not in chosen.insider_attack:
        raise EngineInputError(
            f"controls level {controls!r} not in profile {chosen.key}: "
            f"use one of {', '.join(chosen.controls_levels)}"
        )
    if motives not in LEVELS:
        raise EngineInputError(f"motives level must be low, medium or high, not {motives!r}")
    return InsiderAttack(
        controls,
        motives,
        chosen.insider_attack[controls][motives],
        chosen.key,
        chosen.insider_attack_source,
    )


@dataclass(frozen=True)
class AcquaintanceRecognition:
    """T2: 1 - (1 - p)^m, the chance a recipient knows someone with the data set's condition."""

    prevalence: float
    acquaintances: int
    single_sex: bool
    effective_acquaintances: float
    probability: float
    formula: str
    source: str


def acquaintance_recognition(
    prevalence: float, *, acquaintances: int = DEFAULT_ACQUAINTANCES, single_sex: bool = False
) -> AcquaintanceRecognition:
    """T2 = 1 - (1 - p)^m; m is halved when the condition concerns one sex (seed 001)."""
    if not 0.0 <= prevalence <= 1.0:
        raise EngineInputError(f"prevalence p must be in [0, 1], not {prevalence}")
    low, high = ACQUAINTANCES_RANGE
    if not low <= acquaintances <= high:
        raise EngineInputError(
            f"number of acquaintances m must be in {low}-{high}, not {acquaintances}"
        )
    m = acquaintances / 2 if single_sex else float(acquaintances)
    probability = 1.0 - (1.0 - prevalence) ** m
    formula = f"1 - (1 - {prevalence:g})^{m:g} = {probability:.6g}"
    return AcquaintanceRecognition(
        prevalence, acquaintances, single_sex, m, probability, formula, ACQUAINTANCE_SOURCE
    )


@dataclass(frozen=True)
class DataBreach:
    """T3: probability of a breach at the recipient, from sector statistics."""

    rate: float
    source: str


def data_breach(rate: float = DEFAULT_BREACH_RATE, source: str | None = None) -> DataBreach:
    """T3 = the sector's yearly breach rate; a rate other than the default needs its citation."""
    if not 0.0 <= rate <= 1.0:
        raise EngineInputError(f"breach rate must be in [0, 1], not {rate}")
    if source is None or not source.strip():
        if rate != DEFAULT_BREACH_RATE:
            raise EngineInputError("a breach rate other than the default 0.27 needs a source")
        source = DEFAULT_BREACH_SOURCE
    return DataBreach(rate, source.strip())


# --------------------------------------------------------------------------- context risk


@dataclass(frozen=True)
class ContextRisk:
    release_model: str
    value: float
    deciding_attack: str  # "public", "T1", "T2" or "T3"
    insider: InsiderAttack | None
    acquaintance: AcquaintanceRecognition | None
    breach: DataBreach | None
    explanation: str


def context_risk(
    release_model: str,
    *,
    profile: str = DEFAULT_PROFILE,
    controls: str | None = None,
    motives: str | None = None,
    prevalence: float | None = None,
    acquaintances: int = DEFAULT_ACQUAINTANCES,
    single_sex: bool = False,
    breach_rate: float = DEFAULT_BREACH_RATE,
    breach_source: str | None = None,
) -> ContextRisk:
    """Probability of an attack for the release model (seed 000 step 5).

    public: 1.  non_public: max(T1, T2, T3), T1 from `controls` × `motives`.
    semi_public: the same with T1 fixed at the profile's low controls × high motives
    (0.6 in the IPC and PDPC tables); `controls` and `motives` are then ignored.
    """
    model = check_release_model(release_model)
    if model == "public":
        return ContextRisk(
            model, 1.0, "public", None, None, None, "public release: an attack is assumed (1)"
        )
    if model == "semi_public":
        fixed = get_profile(profile).semi_public_insider
        t1 = insider_attack(fixed["controls"], fixed["motives"], profile=profile)
        t1 = InsiderAttack(t1.controls, t1.motives, t1.probability, t1.profile, t1.source, True)
    else:
        if controls is None or motives is None:
            raise EngineInputError(
                "a non-public release needs the controls and motives levels (T1)"
            )
        t1 = insider_attack(controls, motives, profile=profile)
    if prevalence is None:
        raise EngineInputError("context risk needs the prevalence p of the condition (T2)")
    t2 = acquaintance_recognition(prevalence, acquaintances=acquaintances, single_sex=single_sex)
    t3 = data_breach(breach_rate, breach_source)
    attacks = {"T1": t1.probability, "T2": t2.probability, "T3": t3.rate}
    deciding = max(attacks, key=lambda name: attacks[name])  # first of equals: T1 before T2, T3
    figures = ", ".join(f"{name} = {p:.4g}" for name, p in attacks.items())
    explanation = f"max({figures}) = {attacks[deciding]:.4g} ({deciding})"
    return ContextRisk(model, attacks[deciding], deciding, t1, t2, t3, explanation)


# --------------------------------------------------------------------------- overall risk


def data_risk_target(threshold: float, context: float) -> float:
    """Largest data risk that keeps overall risk within the threshold: threshold / context, ≤ 1."""
    if not 0.0 < threshold <= 1.0:
        raise EngineInputError(f"threshold must be in (0, 1], not {threshold}")
    if not 0.0 <= context <= 1.0:
        raise EngineInputError(f"context risk must be in [0, 1], not {context}")
    return 1.0 if context == 0.0 else min(1.0, threshold / context)


@dataclass(frozen=True)
class OverallRisk:
    data_risk: float
    context_risk: float
    value: float
    threshold: float
    data_risk_target: float
    passes: bool
    explanation: str


# Products of decimal probabilities are not exact in binary (0.3 * 1/3): compare with a tolerance.
_TOLERANCE = 1e-12


def overall_risk(data_risk: float, context: float, threshold: float) -> OverallRisk:
    """overall = data risk × context risk; the release passes when overall ≤ threshold (step 6)."""
    if not 0.0 <= data_risk <= 1.0:
        raise EngineInputError(f"data risk must be in [0, 1], not {data_risk}")
    target = data_risk_target(threshold, context)
    value = data_risk * context
    passes = value <= threshold + _TOLERANCE
    explanation = (
        f"{data_risk:.4g} × {context:.4g} = {value:.4g} "
        f"{'≤' if passes else '>'} threshold {threshold:.4g}"
    )
    return OverallRisk(data_risk, context, value, threshold, target, passes, explanation)
