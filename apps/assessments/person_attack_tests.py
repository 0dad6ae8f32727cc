"""Attack tests on a release of person-keyed data (issues 25 and 28), counted in persons:
the apply job of a person release calls :func:`person_release_attacks` once the file is
written, as the records' apply job calls ``attack_tests.release_attacks``; both go through
``attack_tests.attacks_tested`` and are kept under ``apply_result["attacks"]`` in the same
shape, so Step 8, the review, the report and the recipient summary's JSON twin show them
the same way (``attack_tests.attack_rows``).

The adversary is LONGITUDINAL.md's (§2.2) within Step 5's threat model: they know the
target's person-level values among the known columns and at most p (the release's
adversary power) of the target's events on the known event-level columns, each seen
through the applied generalization.  The engine (``apps.engine.attacks.persons``) matches
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
from apps.assessments.person_tables import linked_data
from apps.assessments.services import sensitive_columns
from apps.assessments.threat_model_live import current_threat_model
from apps.engine.attacks import attack_persons
from apps.engine.attacks.person_index import PERSON_ID
from apps.engine.longitudinal import from_long_table
from apps.engine.longitudinal.data import EventRecords, LongitudinalData
from apps.engine.longitudinal.release import generalized_labels


def _seen(
    inputs: PersonInputs, levels: dict[str, int], person_quasi: list[str], event_quasi: list[str]
) -> LongitudinalData:
    """Every original person as the adversary sees them: their values at the applied
    levels (nothing suppressed: the adversary's knowledge comes from elsewhere)."""
    data = inputs.problem.data
    labels = generalized_labels(inputs.problem, levels)
    return LongitudinalData(
        person_key=data.person_key,
        ids=data.ids,
        person_values=pl.DataFrame([labels[q] for q in person_quasi]),
        tables=tuple(
            EventRecords(
                name=t.name,
                person_index=t.person_index,
                values=pl.DataFrame(
                    [labels[q] for q in t.quasi if q in event_quasi] or None, height=t.events
                ),
            )
            for t in data.tables
        ),
    )


def _released(
    inputs: PersonInputs,
    frame: pl.DataFrame,
    tables: pl.Series | None,
    person_quasi: list[str],
    event_quasi: list[str],
) -> LongitudinalData:
    """The release's persons and events, each person under their true key."""
    if tables is not None and inputs.structure is not None:
        return linked_data(
            inputs.structure,
            frame,
            tables,
            person=inputs.person_key,
            person_quasi=person_quasi,
            event_quasi=event_quasi,
        )
    return from_long_table(
        frame, person=inputs.person_key, person_quasi=person_quasi, event_quasi=event_quasi
    )


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
    known_columns = list(current_threat_model(assessment)["known_columns"])
    person_quasi = [q for q in inputs.person_quasi if q in known_columns]
    # Shifted dates are released as days the adversary's own dates do not equal; what the
    # shift leaves (intervals) is measured by the risk, so they are listed as not attacked.
    dates = inputs.problem.dates
    shifted = set(dates.columns) if dates is not None and dates.shift_days is not None else set()
    event_quasi = [q for q in inputs.event_quasi if q in known_columns and q not in shifted]
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
        frame = written.select([*person_quasi, *event_quasi, *sensitive]).with_columns(
            truth.alias(key)
        )
        released = _released(inputs, frame, tables, person_quasi, event_quasi)
        seen_rows = inputs.frame.select(pl.col(key).cast(pl.String).alias(PERSON_ID), *sensitive)
        released_rows = frame.select(pl.col(key).alias(PERSON_ID), *sensitive)
        return attack_persons(
            _seen(inputs, levels, person_quasi, event_quasi),
            released,
            power=inputs.power,
            sensitive=sensitive,
            seen_rows=seen_rows,
            released_rows=released_rows,
            seed=seed_of(f"{assessment.id}:{sorted(levels.items())}"),
        )

    return attacks_tested(
        attack,
        known_columns=known_columns,
        attacked_on=[*person_quasi, *event_quasi],
        left_out=[c for c in known_columns if c not in person_quasi + event_quasi],
        data_risk_target=float(inputs.target["data_risk_target"]),
        unit="person",
    )


__all__ = ["person_release_attacks"]
