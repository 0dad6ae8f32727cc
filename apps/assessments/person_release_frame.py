"""The long table of a person release at the chosen node (issue 25; LONGITUDINAL.md §3.2):
each quasi-identifier replaced by its generalized value (a person-level one by the
person's value at its level on every row of the person, an event-level one by the
event's), the events and persons the node suppresses removed, and for linked tables each
kept row's event table alongside. Then the direct identifiers masked as Step 7's settings
say, the person key always replaced by its keyed pseudonym (HMAC-SHA-256 under the
release's key, ``longitudinal_search.person_pseudonym_key``). The apply job that writes
and stores it is ``longitudinal_release``; its measure in persons is
``person_release_measure``."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from apps.assessments.domains import KEYED_METHODS, release_pseudonym_keys
from apps.assessments.longitudinal_search import PersonInputs, person_pseudonym_key
from apps.assessments.models import Assessment
from apps.assessments.person_dates import release_plan
from apps.assessments.release_apply import _mask_specs
from apps.datasets.tables import event_tables
from apps.engine.longitudinal.release import NodeRelease, generalized_labels
from apps.engine.masking import MaskSpec, mask_direct_identifiers


def release_frame(
    inputs: PersonInputs, levels: dict[str, int], chosen: NodeRelease
) -> tuple[pl.DataFrame, pl.Series | None]:
    """The long table with the node's values and without its suppressed rows (the person
    key and the other direct identifiers still as they were), and, for linked tables, the
    kept rows' event tables (:func:`_linked_rows`)."""
    labels = generalized_labels(inputs.problem, levels)
    if inputs.row_tables is not None:
        return _linked_rows(inputs, labels, chosen)
    # dates: shifted ones are written as they are (then shifted), the anchor added
    unchanged, added = release_plan(inputs.problem, inputs.frame.columns)
    person = pl.Series("__person", inputs.problem.event_persons[0])
    columns = [labels[q].gather(person).alias(q) for q in [*inputs.person_quasi, *added]]
    columns += [labels[q].alias(q) for q in inputs.event_quasi if q not in unchanged]
    return inputs.frame.with_columns(columns).filter(pl.Series(chosen.kept_events[0])), None


def _linked_rows(
    inputs: PersonInputs, labels: dict[str, pl.Series], chosen: NodeRelease
) -> tuple[pl.DataFrame, pl.Series]:
    """Linked tables' long table at the node: an event's row is kept with its event, the
    row of a person without events with its person; an event-level value is its event's
    (empty on the other tables' rows, as in the long table)."""
    tables = inputs.row_tables
    assert tables is not None and inputs.structure is not None
    problem, height = inputs.problem, inputs.frame.height
    index = pl.DataFrame(
        {"__id": problem.data.ids, "__person": np.arange(problem.persons, dtype=np.int64)}
    )
    person = (
        inputs.frame.select(pl.col(inputs.person_key).cast(pl.String).alias("__id"))
        .join(index, on="__id", how="left", maintain_order="left")
        .get_column("__person")
        .to_numpy()
    )
    kept = np.asarray(chosen.alive, dtype=np.bool_)[person]
    unchanged, added = release_plan(problem, inputs.frame.columns)
    columns = [labels[q].gather(pl.Series(person)).alias(q) for q in [*inputs.person_quasi, *added]]
    names = tables.to_numpy()
    for t, table in enumerate(event_tables(inputs.structure)):
        rows = np.flatnonzero(names == str(table["name"]))
        kept[rows] = chosen.kept_events[t]
        for j in problem.event_dimensions(t):
            name = problem.dimensions[j].name
            if name in unchanged:
                continue
            empty = pl.Series(name, [None] * height, dtype=pl.String)
            columns.append(empty.scatter(rows, labels[name]))
    flags = pl.Series(kept)
    return inputs.frame.with_columns(columns).filter(flags), tables.filter(flags)


def pseudonymized(
    assessment: Assessment, inputs: PersonInputs, frame: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, bytes], dict[str, pl.DataFrame], dict[str, dict[str, Any]]]:
    """Mask the direct identifiers; the person key always by its keyed pseudonym (the
    length set for it in Step 7 when it is a keyed pseudonym there, else 32 hex
    characters). Returns the frame, the keys, the linking tables and the masking as
    recorded."""
    key_column = inputs.person_key
    # The keyed columns' keys and the person key's: the Step 1 domain's, or new ones.
    keys = release_pseudonym_keys(
        assessment, [c for c, m in inputs.config.masking.items() if m.method in KEYED_METHODS]
    )
    keys[key_column] = person_pseudonym_key(assessment)
    specs: dict[str, MaskSpec] = dict(_mask_specs(inputs.config, keys))
    chosen = inputs.config.masking.get(key_column)
    length = chosen.pseudonym_length if chosen is not None and chosen.method == "hmac" else 32
    specs[key_column] = MaskSpec(method="hmac", length=length, key=keys[key_column])
    masked = mask_direct_identifiers(frame, specs, keys=keys)
    recorded = {c: m.to_json() for c, m in inputs.config.masking.items()}
    recorded[key_column] = {"method": "hmac", "length": length}
    return (
        masked.data,
        dict(masked.secrets.keys),
        dict(masked.secrets.linking_tables),
        recorded,
    )
