"""Attack tests on a release of person-keyed data (issues 25 and 28), counted in persons:
the apply job of a person release calls :func:`person_release_attacks` once the file is
written, as the records' apply job calls ``attack_tests.release_attacks``; both go through
``attack_tests.attacks_tested`` and are kept under ``apply_result["attacks"]`` in the same
shape, so Step 8, the review, the report and the recipient summary's JSON twin show them
the same way (``attack_tests.attack_rows``).

The adversary is LONGITUDINAL.md's (§2.2) within Step 5's threat model: they know the
target's person-level values among the known columns and at most p (the release's
adversary power) of the target's events on the known event-level columns, each seen
through the applied generalization, and the derived person-level facts the release
reveals and the risk counts (``released_persons``: the number of events, the anchor, and
with shifted dates the intervals and the anchor the shift leaves), computed in the one
place the re-measure uses, alike for the originals and the release; the result lists
them under ``derived``.  The engine (``apps.engine.attacks.persons``) matches
in persons; the pseudonym is a keyed one-to-one function of the person key, so the
release is attacked with each released person's true key in place of their pseudonym
(linking to the right pseudonym is linking to the right key).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from apps.assessments.attack_tests import attacks_tested, seed_of
from apps.assessments.longitudinal_search import PersonInputs
from apps.assessments.models import Assessment
from apps.assessments.released_persons import derived_known, released_data, released_problem
from apps.assessments.selectors import sensitive_columns
from apps.assessments.threat_model_live import current_threat_model
from apps.core.errors import ApplicationError
from apps.engine.attacks import attack_persons
from apps.engine.attacks.person_index import PERSON_ID
from apps.engine.errors import EngineInputError
from apps.engine.longitudinal.release import labelled_data


def person_release_attacks(
    assessment: Assessment,
    inputs: PersonInputs,
    levels: dict[str, int],
    generalized: pl.DataFrame,
    tables: pl.Series | None,
    written: pl.DataFrame,
) -> dict[str, Any]:
    """Attack the written release in persons (module docstring). ``generalized`` is the
    release before its pseudonyms, row for row the ``written`` file; ``tables`` each
    released row's event table (linked tables) or None. Never raises on the data."""
    key = inputs.person_key
    problem = inputs.problem
    known_columns = list(current_threat_model(assessment)["known_columns"])
    person_quasi = [q for q in inputs.person_quasi if q in known_columns]
    # dates as the risk measures them: generalized, anchored intervals, or (shifted) what
    # the shift leaves; the derived facts the release reveals (released_persons)
    event_quasi = [q for q in inputs.event_quasi if q in known_columns]
    derived, facts = derived_known(problem, levels, event_quasi)
    names = written.columns
    sensitive = [
        s
        for s in sensitive_columns(assessment)
        if s in names and s in inputs.frame.columns and s not in known_columns
    ]
    if generalized.height != written.height:
        return {
            "unit": "person",
            "status": "not_run",
            "reason": "The written file does not hold the rows the release computed.",
        }

    def attack() -> Any:
        truth = generalized.get_column(key).cast(pl.String)
        frame = written.with_columns(truth.alias(key))
        try:
            data = released_data(inputs, frame, tables, levels)
            released, at = released_problem(problem, data, levels)
        except ApplicationError as exc:
            raise EngineInputError(exc.message) from None
        seen_rows = inputs.frame.select(pl.col(key).cast(pl.String).alias(PERSON_ID), *sensitive)
        released_rows = frame.select(pl.col(key).alias(PERSON_ID), *sensitive)
        view = ([*person_quasi, *derived], event_quasi)
        return attack_persons(
            labelled_data(problem, levels, *view),
            labelled_data(released, at, *view),
            power=inputs.power,
            sensitive=sensitive,
            seen_rows=seen_rows,
            released_rows=released_rows,
            seed=seed_of(f"{assessment.id}:{sorted(levels.items())}"),
        )

    tested = attacks_tested(
        attack,
        known_columns=known_columns,
        attacked_on=[*person_quasi, *event_quasi],
        left_out=[c for c in known_columns if c not in person_quasi + event_quasi],
        data_risk_target=float(inputs.target["data_risk_target"]),
        unit="person",
    )
    return {**tested, "derived": facts if tested["status"] == "done" else []}


__all__ = ["person_release_attacks"]
