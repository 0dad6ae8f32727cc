"""The ordered registry of the method's steps, their dependencies and their state.

A step is *done* when its inputs are complete and its result is current; it is *stale*
when a step it depends on changed after its result was computed. Stale results stay
readable but must be recomputed before the assessment can be submitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from django.utils import timezone

from apps.classification.selectors import classification_status

if TYPE_CHECKING:
    from apps.assessments.models import Assessment


@dataclass(frozen=True)
class Step:
    number: int
    slug: str
    title: str
    guideline: str  # the guideline section it implements
    summary: str


class StepState(TypedDict):
    step: Step
    done: bool
    stale: bool
    state: str


STEPS: tuple[Step, ...] = (
    Step(
        1,
        "release",
        "Release model",
        "IPC 2016, step 1",
        "Who receives the data and under what conditions.",
    ),
    Step(
        2,
        "classification",
        "Classify variables",
        "IPC 2016, step 2",
        "Which columns identify people directly, which indirectly, which are sensitive.",
    ),
    Step(
        3,
        "threshold",
        "Risk threshold",
        "IPC 2016, step 3",
        "How much re-identification risk is acceptable, from the invasion of privacy.",
    ),
    Step(
        4,
        "data-risk",
        "Data risk",
        "IPC 2016, step 4",
        "How identifiable the records are on their quasi-identifiers.",
    ),
    Step(
        5,
        "context-risk",
        "Context risk",
        "IPC 2016, step 5",
        "How likely an attempt at re-identification is, given the recipient.",
    ),
    Step(
        6,
        "overall-risk",
        "Overall risk",
        "IPC 2016, step 6",
        "Data risk times context risk, against the threshold.",
    ),
    Step(
        7,
        "deidentify",
        "De-identify",
        "IPC 2016, step 7",
        "Mask direct identifiers; generalize and suppress quasi-identifiers optimally.",
    ),
    Step(
        8, "utility", "Utility", "IPC 2016, step 8", "What the de-identification cost the analysis."
    ),
)
BY_SLUG = {step.slug: step for step in STEPS}


def step_title(slug: str) -> str:
    """A step as people name it ("Step 4: Data risk"); "general" is the whole assessment."""
    step = BY_SLUG.get(slug)
    if step is None:
        return "the whole assessment" if slug == "general" else slug
    return f"Step {step.number}: {step.title}"


# Which later steps a change invalidates. Step 6 is derived from Steps 3-5 on every read,
# so it is never marked itself: it is stale exactly when one of its inputs is. The data risk
# before de-identification (Step 4) informs Step 6 but does not change the target of Step 7.
DEPENDENTS: dict[str, tuple[str, ...]] = {
    "release": ("context-risk", "deidentify", "utility"),
    "classification": ("data-risk", "deidentify", "utility"),
    "threshold": ("deidentify", "utility"),
    "data-risk": (),
    "context-risk": ("deidentify", "utility"),
    "overall-risk": ("deidentify", "utility"),
    "deidentify": ("utility",),
    "utility": (),
}


def _has_result(assessment: Assessment, slug: str) -> bool:
    checks: dict[str, Callable[[], bool]] = {
        "release": lambda: bool(assessment.release_model),
        "classification": lambda: bool(
            classification_status(dataset=assessment.dataset)["complete"]
        ),
        "threshold": lambda: assessment.threshold_result is not None,
        "data-risk": lambda: assessment.risk_result is not None,
        "context-risk": lambda: assessment.context_result is not None,
        "overall-risk": lambda: all(
            _has_result(assessment, s) for s in ("threshold", "data-risk", "context-risk")
        ),
        "deidentify": lambda: assessment.apply_result is not None,
        "utility": lambda: assessment.apply_result is not None and assessment.utility_accepted,
    }
    return checks[slug]()


def is_stale(assessment: Assessment, slug: str) -> bool:
    return bool(assessment.step_state.get(slug, {}).get("stale"))


def step_states(assessment: Assessment) -> list[StepState]:
    """Every step with its state for the overview: done, stale, or still to do."""
    states: list[StepState] = []
    for step in STEPS:
        done = _has_result(assessment, step.slug)
        stale = done and (is_stale(assessment, step.slug) or _upstream_stale(assessment, step.slug))
        states.append(
            {
                "step": step,
                "done": done and not stale,
                "stale": stale,
                "state": "stale" if stale else "done" if done else "to do",
            }
        )
    return states


def _upstream_stale(assessment: Assessment, slug: str) -> bool:
    if slug == "overall-risk":  # derived: stale whenever one of its inputs is
        return any(is_stale(assessment, s) for s in ("threshold", "data-risk", "context-risk"))
    return False


def mark_changed(assessment: Assessment, slug: str) -> list[str]:
    """Record that a step was (re)done now; mark what depends on it stale. Returns those."""
    now = timezone.now().isoformat()
    state = dict(assessment.step_state)
    state[slug] = {"stale": False, "at": now}
    marked = []
    pending = list(DEPENDENTS[slug])
    seen: set[str] = set()
    while pending:
        dependent = pending.pop(0)
        if dependent in seen:
            continue
        seen.add(dependent)
        if _has_result(assessment, dependent) and not state.get(dependent, {}).get("stale"):
            state[dependent] = {
                **state.get(dependent, {}),
                "stale": True,
                "stale_since": now,
                "because": slug,
            }
            marked.append(dependent)
        pending.extend(DEPENDENTS[dependent])
    assessment.step_state = state
    return marked


def mark_stale(assessment: Assessment, slug: str) -> None:
    """A step's own inputs changed after its result: the result and its dependents are stale."""
    now = timezone.now().isoformat()
    state = dict(assessment.step_state)
    for name in (slug, *DEPENDENTS[slug]):
        state[name] = {**state.get(name, {}), "stale": True, "stale_since": now, "because": slug}
    assessment.step_state = state


def all_done(assessment: Assessment) -> bool:
    return all(s["done"] for s in step_states(assessment))
