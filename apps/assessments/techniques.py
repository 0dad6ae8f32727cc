"""Step 7 beyond global recoding: local suppression and the PDPC techniques in the wizard.

The search finds how far to generalize each quasi-identifier; records whose group stays too
small are then suppressed whole. Two further kinds of treatment can be added, each one
configured in ``DeidConfig.techniques`` and applied, in order, when the file is written:

- **Local suppression** replaces that record suppression: single quasi-identifier values of
  the few records that stand out are blanked (fewest cells first, weighted by the importance
  the analyst gives each variable) until every group holds at least k records — a blank
  counts as a value of its own, so the risk is measured on the written file by the same
  class-size rule (Portage, seed 004; PDPC 2018 §3.1).
- **Techniques on other variables** protect values that are not quasi-identifiers (an
  income, a length of stay, a category): rounding, top and bottom coding, microaggregation,
  noise, rank swapping (numbers) and PRAM (categories). They leave the identity risk of the
  quasi-identifiers unchanged; their effect is measured per variable (share of values
  changed, mean, variance, correlation with the true values, distance between
  distributions) and by record linkage on the changed variables (PDPC 2018 §3).

Each technique runs through ``apps.engine.techniques.apply_technique``; the report lists its
parameters without the seeds that would undo it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import polars as pl
from django.contrib.auth.models import User
from django.db import transaction

from apps.assessments import steps
from apps.assessments.configuration import DeidConfig, Technique
from apps.assessments.deidentify import deid_config, search_target
from apps.assessments.drafts import assessment_editable
from apps.assessments.hierarchies import hierarchies_ensure
from apps.assessments.models import Assessment
from apps.assessments.privacy_models import encode_for_search
from apps.assessments.selectors import quasi_identifiers
from apps.audit.services import audit_record
from apps.classification.models import Variable
from apps.core.errors import ApplicationError
from apps.datasets.storage import local_path
from apps.engine.apply import apply_levels
from apps.engine.criteria import criterion_for_release
from apps.engine.errors import EngineError
from apps.engine.reading import read_table
from apps.engine.techniques.local_suppression import LocalSuppressionParams
from apps.engine.techniques.microaggregation import MicroaggregationParams
from apps.engine.techniques.noise import NoiseParams
from apps.engine.techniques.pram import PramParams
from apps.engine.techniques.rank_swap import RankSwapParams
from apps.engine.techniques.registry import apply_technique
from apps.engine.techniques.rounding import RoundingParams, TopBottomParams

NUMERIC = ("rounding", "top_bottom_coding", "microaggregation", "noise", "rank_swap")
CATEGORICAL = ("pram",)
OFFERED = ("local_suppression", *NUMERIC, *CATEGORICAL)
TITLES = {
    "local_suppression": "Local suppression (blank single values instead of removing records)",
    "rounding": "Rounding to a base",
    "top_bottom_coding": "Top and bottom coding",
    "microaggregation": "Microaggregation (group averages)",
    "noise": "Noise addition",
    "rank_swap": "Rank swapping",
    "pram": "Post-randomisation (PRAM)",
}
PERTURBATIVE = frozenset({"noise", "rank_swap", "pram"})


def _number(entry: dict[str, Any], key: str, default: float | None = None) -> float | None:
    """The one reader of a technique's numbers (page text or JSON): finite, or refused. A NaN
    passes every ``<=`` check after it, and neither JSON nor ``jsonb`` can store it."""
    value = entry.get(key, default)
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    title = TITLES.get(entry.get("technique", ""), "Technique")
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ApplicationError(
            f"{title}: '{key}' must be a number, not {value!r}.", {"field": key}
        ) from None
    if not math.isfinite(number):
        raise ApplicationError(
            f"{title}: '{key}' must be a finite number, not {value!r}.", {"field": key}
        )
    return number


def techniques_check(
    entries: Sequence[dict[str, Any]],
    *,
    quasi: Sequence[str],
    numeric: Sequence[str],
    categorical: Sequence[str],
    has_privacy_models: bool,
) -> list[Technique]:
    """Validate the configured techniques and return them normalized (a clear message
    naming the technique and the variable otherwise)."""
    out: list[Technique] = []
    used: set[str] = set()
    for raw in entries:
        entry = dict(raw)
        kind = str(entry.get("technique", ""))
        if kind not in OFFERED:
            raise ApplicationError(
                f"'{kind}' is not a technique Step 7 offers: {', '.join(OFFERED)}.",
                {"field": "technique"},
            )
        if kind == "local_suppression":
            if any(e.technique == kind for e in out):
                raise ApplicationError("Local suppression is set once, for all quasi-identifiers.")
            if not quasi:
                raise ApplicationError("Local suppression needs quasi-identifiers (Step 2).")
            if has_privacy_models:
                raise ApplicationError(
                    "Local suppression cannot be combined with privacy models on sensitive "
                    "variables: those suppress whole groups. Remove one of the two."
                )
            importance = {}
            for column, weight in (entry.get("importance") or {}).items():
                if column not in quasi:
                    raise ApplicationError(
                        f"Local suppression: '{column}' is not a quasi-identifier.",
                        {"column": column},
                    )
                value = _number({"technique": kind, "importance": weight}, "importance")
                if value is None or value <= 0:
                    raise ApplicationError(
                        f"Local suppression: the importance of '{column}' must be above 0.",
                        {"column": column},
                    )
                importance[column] = value
            out.append(Technique(technique=kind, importance=importance))
            continue
        column = str(entry.get("column", ""))
        allowed = categorical if kind in CATEGORICAL else numeric
        if column in quasi:
            raise ApplicationError(
                f"{TITLES[kind]} on '{column}': it is a quasi-identifier, which generalization "
                "(and local suppression) already treat. Use it on another variable.",
                {"column": column},
            )
        if column not in allowed:
            what = "a categorical" if kind in CATEGORICAL else "a numeric"
            raise ApplicationError(
                f"{TITLES[kind]} needs {what} variable that is released (not a direct "
                f"identifier); '{column}' is not one.",
                {"column": column},
            )
        if column in used:
            raise ApplicationError(f"'{column}' already has a technique: one per variable.")
        used.add(column)
        normalized: dict[str, Any] = {}
        if kind == "rounding":
            base = _number(entry, "base")
            if base is None or base <= 0:
                raise ApplicationError(f"Rounding '{column}': give a base above 0 (e.g. 5).")
            normalized["base"] = base
        elif kind == "top_bottom_coding":
            top, bottom = _number(entry, "top"), _number(entry, "bottom")
            if top is None and bottom is None:
                raise ApplicationError(f"Top and bottom coding '{column}': give a top or a bottom.")
            if top is not None and bottom is not None and bottom >= top:
                raise ApplicationError(
                    f"Top and bottom coding '{column}': the bottom must be below the top."
                )
            normalized.update(top=top, bottom=bottom)
        elif kind == "microaggregation":
            k = _number(entry, "k", 3.0)
            if k is None or k < 2 or k != int(k):
                raise ApplicationError(f"Microaggregation '{column}': k is a whole number ≥ 2.")
            normalized["k"] = int(k)
        elif kind == "noise":
            scale = _number(entry, "scale", 0.1)
            if scale is None or not 0 < scale <= 2:
                raise ApplicationError(f"Noise on '{column}': the scale is above 0 and at most 2.")
            noise_kind = entry.get("kind") or "additive"
            if noise_kind not in ("additive", "multiplicative"):
                raise ApplicationError(f"Noise on '{column}': additive or multiplicative.")
            normalized.update(scale=scale, kind=noise_kind)
        elif kind == "rank_swap":
            percent = _number(entry, "percent", 5.0)
            if percent is None or not 0 < percent <= 50:
                raise ApplicationError(f"Rank swapping '{column}': a window of 0–50 % of records.")
            normalized["percent"] = percent
        elif kind == "pram":
            retain = _number(entry, "retain", 0.8)
            if retain is None or not 0 < retain < 1:
                raise ApplicationError(
                    f"PRAM on '{column}': the chance of keeping a category is between 0 and 1."
                )
            normalized["retain"] = retain
        out.append(Technique(technique=kind, column=column, **normalized))
    # Local suppression first: it works on the generalized quasi-identifiers.
    return sorted(out, key=lambda e: e.technique != "local_suppression")


def engine_params(entry: Technique, *, quasi: Sequence[str], k: int) -> Any:
    """The engine's parameter object for one configured technique (a fresh seed each run)."""
    import secrets

    kind = entry.technique
    seed = secrets.randbits(63)
    if kind == "local_suppression":
        return LocalSuppressionParams(quasi=tuple(quasi), k=k, importance=dict(entry.importance))
    column = entry.column
    if kind == "rounding":
        return RoundingParams(columns=(column,), base=float(_given(entry.base)))
    if kind == "top_bottom_coding":
        return TopBottomParams(column=column, top=entry.top, bottom=entry.bottom)
    if kind == "microaggregation":
        return MicroaggregationParams(columns=(column,), k=int(_given(entry.k)))
    if kind == "noise":
        return NoiseParams(
            columns=(column,),
            kind="multiplicative" if entry.kind == "multiplicative" else "additive",
            scale=float(_given(entry.scale)),
            seed=seed,
        )
    if kind == "rank_swap":
        return RankSwapParams(columns=(column,), percent=float(_given(entry.percent)), seed=seed)
    return PramParams(column=column, retain=float(_given(entry.retain)), seed=seed)


def _given(value: float | None) -> float:
    """A number ``techniques_check`` required (a stored technique always has it)."""
    if value is None:
        raise ApplicationError("A technique in Step 7's settings lacks a number: set it again.")
    return value


def _outcome_dict(outcome: Any, entry: Technique) -> dict[str, Any]:
    measure = outcome.measure
    detail = outcome.detail
    effects = []
    for effect in measure.utility if measure else ():
        row = {k: v for k, v in asdict(effect).items() if k != "distribution"}
        effects.append(row)
    out: dict[str, Any] = {
        "technique": outcome.technique,
        "title": outcome.title,
        "explanation": outcome.explanation,
        "source": outcome.source,
        "parameters": {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in outcome.parameters.items()
        },
        "changed": list(outcome.changed),
        "rule": measure.rule if measure else "",
        "rule_explanation": measure.explanation if measure else "",
        "exact_max_risk": measure.exact.max_risk if measure else None,
        "linkage_share": measure.linkage.share if measure and measure.linkage else None,
        "utility": effects,
    }
    if entry.technique == "local_suppression":
        out.update(
            blanked_cells=int(detail.blanked_cells),
            blanked_by_column=dict(detail.blanked_by_column),
            method_used=str(detail.method_used),
            optimal=bool(detail.optimal),
            gap=float(detail.gap),
            # the blanks' weighted cost as a multiple of the least any solution can have
            # (a ratio, not the gap (cost - bound) / cost, which reads as "% above")
            lower_bound=float(detail.lower_bound),
            ratio=float(detail.weighted_cost / detail.lower_bound)
            if detail.lower_bound > 0
            else None,
        )
    return out


def run_techniques(
    frame: pl.DataFrame, entries: Sequence[Technique], *, quasi: Sequence[str], k: int
) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """Apply the configured techniques in order; return the data and, per technique, what it
    did and its measured effect."""
    outcomes = []
    for entry in entries:
        params = engine_params(entry, quasi=quasi, k=k)
        measured_on = list(quasi) if entry.technique == "local_suppression" else [entry.column]
        try:
            outcome = apply_technique(frame, params, quasi=measured_on)
        except EngineError as exc:
            raise ApplicationError(f"{TITLES[entry.technique]}: {exc}") from None
        frame = outcome.data
        outcomes.append(_outcome_dict(outcome, entry))
    return frame, outcomes


def technique_columns(assessment: Assessment) -> dict[str, list[str]]:
    """Released variables a technique may change: numbers and categories that are neither
    quasi-identifiers nor direct identifiers."""
    numeric, categorical = [], []
    for v in Variable.objects.filter(dataset=assessment.dataset).order_by("position"):
        if v.role in ("direct", "quasi", ""):
            continue
        if v.inferred_type in ("integer", "decimal"):
            numeric.append(v.name)
        elif v.inferred_type in ("categorical", "boolean"):
            categorical.append(v.name)
    return {"numeric": numeric, "categorical": categorical}


@transaction.atomic
def techniques_set(*, assessment: Assessment, user: User, entries: list[dict[str, Any]]) -> None:
    """Replace the configured techniques (the file must be written again); audited."""
    assessment_editable(assessment)
    locked = Assessment.objects.select_for_update().get(id=assessment.id)
    config = deid_config(locked)
    columns = technique_columns(locked)
    checked = techniques_check(
        entries,
        quasi=quasi_identifiers(locked),
        numeric=columns["numeric"],
        categorical=columns["categorical"],
        has_privacy_models=bool(config.privacy_models),
    )
    current = DeidConfig.from_json(locked.deid_config)
    if tuple(current.techniques or ()) == tuple(checked):
        return
    stored = current.replace(techniques=tuple(checked)).to_json()
    locked.deid_config = stored
    if locked.apply_result is not None:
        steps.mark_stale(locked, "deidentify")
    locked.save(update_fields=["deid_config", "step_state", "updated_at"])
    assessment.deid_config = stored
    assessment.step_state = locked.step_state
    audit_record(
        organization=assessment.organization,
        actor=user,
        action="assessment.deidentify.techniques",
        obj=assessment,
        details={"techniques": [t.to_json() for t in checked]},
    )


PREVIEW_ROWS = 2_000


def technique_preview(*, assessment: Assessment, index: int) -> dict[str, Any]:
    """One configured technique tried on a fixed sample of the generalized data (at the
    chosen levels), before the file is written: what it changes and its measured effect.
    Local suppression depends on the whole file, so its count on a sample shows the kind
    of change, not the final number."""
    config = deid_config(assessment)
    entries = list(config.techniques or ())
    if not 0 <= index < len(entries):
        raise ApplicationError("No such technique in Step 7's settings.", status=404)
    levels = assessment.chosen_levels
    if not levels:
        raise ApplicationError("Run the search and choose a solution first (Step 7.4).", status=409)
    quasi = quasi_identifiers(assessment)
    target = search_target(assessment)
    specs = {s.column: s for s in hierarchies_ensure(assessment=assessment)}
    with local_path(assessment.dataset.parquet_path) as path:
        data = read_table(path)
        inputs = encode_for_search(data, quasi, specs, config)
        frame, _ = apply_levels(
            data,
            lookups=inputs.lookups,
            dictionaries=inputs.dictionaries,
            levels=levels,
            release_size=1,
            seed=0,
        )
    criterion = criterion_for_release(
        target["release_model"], target["threshold"], target["context_risk"]
    )
    sample = frame if frame.height <= PREVIEW_ROWS else frame.sample(PREVIEW_ROWS, seed=0)
    _, results = run_techniques(sample, [entries[index]], quasi=quasi, k=criterion.release_size)
    return {**results[0], "rows": sample.height, "of_rows": frame.height}
