"""A release of linked tables written again as its tables (issue 25; LONGITUDINAL.md §1,
§6): the person table and each event table, each in Parquet and CSV.

The long table that ``longitudinal_release`` writes (generalized, suppressed, the person
key already replaced by its keyed pseudonym) is split back along the structure recorded
at upload (``Dataset.table_structure``):

* the person table: one row per person left in the release (sorted by pseudonym, so the
  order of the original file is not carried over), with the person table's own columns
  only: the pseudonym and the person-level values. A person is left when the long table
  has a row of theirs: a person whose every event was suppressed has none there and so
  none here; it is a suppressed person in the search's figures too
  (``released.settle``), and the figures measured agree;
* each event table: its events left in the release, in their input order, with the
  pseudonym and the table's own columns (event-level values; a person-level column
  repeated in the upload is not repeated here).

So a suppressed person is in no table, a suppressed event in none, and every table
carries the same pseudonym for a person (the one key of
``domains.release_pseudonym_keys``). The written files are read back and measured in
persons once more; the figures must be the long table's (:func:`check_tables_measure`).

Each file is listed in the apply result (``release_files.LISTED``) with its table, rows,
persons and SHA-256: the submission freezes it, the decision records its digest, and its
download is checked against that digest, as for every file of a release
(``release_files.release_manifest``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from apps.assessments.longitudinal_search import PersonInputs
from apps.core.errors import ApplicationError
from apps.datasets import storage
from apps.datasets.storage import sha256_of
from apps.datasets.tables import EVENT, PERSON, event_tables
from apps.engine.errors import EngineError
from apps.engine.formula_guard import guard_formulas_lazy
from apps.engine.longitudinal.data import EventTable, LongitudinalData, from_tables

#: Which figures of the tables' measure must equal the long table's.
MEASURED = ("persons", "events", "min_class_size", "max_risk", "average_risk")


def file_stem(table: str, taken: set[str]) -> str:
    """A file name for a table's release files: its upload's name without the extension,
    letters, digits, '-', '_' and '.' only, made unique among ``taken``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(table).stem).strip("._") or "table"
    unique, n = stem, 2
    while unique.lower() in taken:
        unique, n = f"{stem}-{n}", n + 1
    taken.add(unique.lower())
    return unique


def split_tables(
    structure: dict[str, Any], key: str, released: pl.DataFrame, tables: pl.Series
) -> list[tuple[dict[str, Any], pl.DataFrame]]:
    """The released long table's rows as the person table and each event table
    (``tables``: each row's event table, None for a person without events)."""
    person = next(t for t in structure["tables"] if t["role"] == PERSON)
    columns = [c for c in person["columns"] if c in released.columns and c != key]
    owned = {c for t in structure["tables"] for c in (t.get("columns") or [])}
    owned |= {c for t in event_tables(structure) for c in t["event_columns"]}
    # derived person-level columns the release adds (the anchored dates' first date)
    columns += [c for c in released.columns if c not in owned and c != key]
    people = released.select(key, *columns).unique(maintain_order=True)
    if people.height != people.get_column(key).n_unique():
        varying = [
            c for c in columns if people.select(pl.col(c).n_unique().over(key).max()).item() > 1
        ]
        raise ApplicationError(
            "A column of the person table takes several values for one person in the "
            f"release ({', '.join(varying)}): the tables are not written."
        )
    people = people.sort(key)
    out = [(person, people)]
    for table in event_tables(structure):
        own = [c for c in table["event_columns"] if c in released.columns]
        rows = released.filter(tables.eq_missing(str(table["name"]))).select(key, *own)
        out.append((table, rows))
    return out


def write_tables(
    structure: dict[str, Any],
    key: str,
    released: pl.DataFrame,
    tables: pl.Series,
    scratch: Path,
    *,
    guard: bool,
) -> list[dict[str, Any]]:
    """Write each table in Parquet and CSV (the CSV's formula cells guarded as the long
    table's) in ``scratch/tables``; their listed entries, ``local`` the file written."""
    folder = scratch / "tables"
    folder.mkdir()
    taken: set[str] = set()
    listed: list[dict[str, Any]] = []
    for table, frame in split_tables(structure, key, released, tables):
        stem = file_stem(str(table["name"]), taken)
        parquet = folder / f"{stem}.parquet"
        frame.write_parquet(parquet)
        csv_path = folder / f"{stem}.csv"
        lazy = pl.scan_parquet(parquet)
        (guard_formulas_lazy(lazy)[0] if guard else lazy).sink_csv(csv_path)
        facts = {
            "table": str(table["name"]),
            "role": PERSON if table["role"] == PERSON else EVENT,
            "rows": frame.height,
            "persons": frame.get_column(key).n_unique(),
            "columns": frame.columns,
        }
        for fmt, path in (("parquet", parquet), ("csv", csv_path)):
            listed.append(
                {
                    "name": path.name,
                    "format": fmt,
                    **facts,
                    "sha256": sha256_of(path),
                    "bytes": path.stat().st_size,
                    "local": str(path),
                }
            )
    return listed


def tables_data(
    inputs: PersonInputs, listed: list[dict[str, Any]], added: list[str]
) -> LongitudinalData:
    """The written Parquet tables read back as persons and events (the pseudonym as the
    person): what the recipient reads, to be measured as the long table was. ``added``:
    the derived person-level columns released in the person table (the anchor)."""
    key = inputs.person_key
    parquet = [f for f in listed if f["format"] == "parquet"]
    people = next(pl.read_parquet(f["local"]) for f in parquet if f["role"] == PERSON)
    person_quasi = [*inputs.person_quasi, *added]
    events = []
    for f in (f for f in parquet if f["role"] == EVENT):
        frame = pl.read_parquet(f["local"])
        quasi = tuple(q for q in inputs.event_quasi if q in frame.columns)
        events.append(EventTable(name=f["table"], data=frame, person=key, quasi=quasi))
    try:
        return from_tables(
            persons=people.select(key, *person_quasi),
            person_key=key,
            person_quasi=person_quasi,
            events=events,
        )
    except EngineError as exc:
        raise ApplicationError(f"The released tables could not be measured: {exc}") from None


def check_tables_measure(found: dict[str, Any], long: dict[str, Any]) -> None:
    """Refuse the release unless the tables' figures (``found``) are the long table's:
    the tables are the release the recipient reads."""
    differing = [name for name in MEASURED if abs(float(found[name]) - float(long[name])) > 1e-12]
    if differing:
        raise ApplicationError(
            "The released tables measure differently from the released long table "
            f"({', '.join(differing)}): the release is not written."
        )


def store_tables(listed: list[dict[str, Any]], folder: str, stored: list[str]) -> None:
    """Store each written file in the apply job's ``folder`` (so that a re-run of the job
    finds the files of an attempt that died; the stored name replaces ``local``;
    ``stored`` collects the names, for the caller's clean-up on failure)."""
    for entry in listed:
        local = entry.pop("local")
        entry["path"] = storage.store(Path(local), f"{folder}/table-{entry['name']}")
        stored.append(entry["path"])
