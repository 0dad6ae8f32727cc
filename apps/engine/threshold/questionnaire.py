"""The invasion-of-privacy questionnaire (Step 3): seed 000 step 3's seven factors, scored.

The scoring rule is the product's own (the guideline lists the factors but leaves the
scoring to the assessor); it is shown to the user with every score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from apps.engine.errors import EngineInputError

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
