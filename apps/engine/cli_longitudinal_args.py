"""The longitudinal options of `measure` and `search` (risk counted in persons; issue 25)
and the problem they describe: the options added to the existing parsers (the person
column, event-level quasi-identifiers, the adversary's power, a person table, the number
of events, date columns and their mode, the subset budget), the check that none of them is
given without ``--person``, and the files they name read into one
``LongitudinalProblem`` (hierarchy files checked against their columns, the derived
person-level quasi-identifiers, events per person and the anchor date, added when named).
The reports built on that problem are ``cli_longitudinal``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from apps.engine.cli_args import names, pairs
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import Hierarchy
from apps.engine.hierarchy_files import check_covered, read_hierarchy_file
from apps.engine.longitudinal import (
    BUILT_INS,
    DEFAULT_EVENT_SUPPRESSION_LIMIT,
    DEFAULT_SUBSET_BUDGET,
    DEFAULT_TARGET,
    DateSpec,
    EventCountSpec,
    EventTable,
    LongitudinalProblem,
    from_tables,
    prepare,
)
from apps.engine.longitudinal.data import LongitudinalData
from apps.engine.longitudinal.dates import ANCHOR, DateMode
from apps.engine.longitudinal.problem import EVENT_COUNT, HierarchySource
from apps.engine.reading import read_table

#: Options that only make sense with --person (named in the error when it is missing).
_PERSON_ONLY = (
    "event_quasi",
    "power",
    "persons",
    "person_key",
    "event_count",
    "dates",
    "shift_days",
    "subset_budget",
    "levels",
    "min_level",
    "event_suppression_limit",
    "target",
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--person",
        metavar="COL",
        help="person column of FILE: FILE holds events (several rows per person) and risk "
        "is counted per person",
    )
    parser.add_argument(
        "--event-quasi",
        action="append",
        metavar="COL[,COL...]",
        help="event-level quasi-identifiers (with --person); --quasi are then person-level",
    )
    parser.add_argument(
        "--power", help="adversary power: events the adversary knows, 1-10 or 'all' (default 3)"
    )
    parser.add_argument("--persons", metavar="PERSONS", help="person table (with --person)")
    parser.add_argument(
        "--person-key", metavar="COL", help="person column of --persons (default: --person)"
    )
    parser.add_argument("--persons-sep", help="CSV separator of --persons (default: sniffed)")
    parser.add_argument(
        "--event-count",
        action="store_true",
        help="add the number of events per person as a person-level quasi-identifier "
        "(as does naming event_count in --quasi)",
    )
    parser.add_argument(
        "--event-count-top",
        default="p95",
        metavar="N|p95|none",
        help="top-code of the number of events (default: its 95th percentile)",
    )
    parser.add_argument(
        "--dates", action="append", metavar="COL[,COL...]", help="event-level date columns"
    )
    parser.add_argument(
        "--date-mode",
        choices=("absolute", "anchored"),
        help="absolute: day, month, quarter, year; anchored: first date per person, then "
        "intervals in days (default absolute; anchored when --shift-days)",
    )
    parser.add_argument(
        "--shift-days",
        type=int,
        metavar="N",
        help="dates are released shifted per person by up to N days: measure what remains",
    )
    parser.add_argument(
        "--subset-budget",
        type=int,
        metavar="N",
        help=f"most subsets an exact count may examine (default {DEFAULT_SUBSET_BUDGET:,})",
    )


def relax_required(parser: argparse.ArgumentParser, *options: str) -> None:
    """Make options required only for the single-table path (checked by the handler)."""
    for action in parser._actions:
        if any(o in action.option_strings for o in options):
            action.required = False


def check_single_table(args: argparse.Namespace, required: Sequence[str]) -> None:
    """Without --person: the single-table command as before (same required options)."""
    missing = [f"--{name.replace('_', '-')}" for name in required if getattr(args, name) is None]
    if missing:
        raise EngineInputError(f"the following arguments are required: {', '.join(missing)}")
    given = [
        f"--{name.replace('_', '-')}"
        for name in _PERSON_ONLY
        if getattr(args, name, None) not in (None, False)
    ]
    if given:
        raise EngineInputError(f"{', '.join(given)} need --person (the person column)")


def add_measure_options(parser: argparse.ArgumentParser) -> None:
    """Longitudinal options of `measure`."""
    _common(parser)
    parser.add_argument(
        "--target",
        type=float,
        help=f"risk above which a person is at risk (default {DEFAULT_TARGET})",
    )
    parser.add_argument(
        "--hierarchy",
        action="append",
        metavar="COL=PATH|NAME",
        help=f"hierarchy of a quasi-identifier, an ARX file or built-in ({', '.join(BUILT_INS)})",
    )
    parser.add_argument(
        "--hierarchy-sep",
        help="separator of hierarchy files (default ';', or the file's own when it has no ';')",
    )
    parser.add_argument(
        "--levels", action="append", metavar="COL=L[,COL=L...]", help="measure at these levels"
    )
    relax_required(parser, "--quasi")


def add_search_options(parser: argparse.ArgumentParser) -> None:
    """Longitudinal options of `search`."""
    _common(parser)
    parser.add_argument(
        "--event-suppression-limit",
        type=float,
        metavar="FRACTION",
        help=f"share of events that may be suppressed (default {DEFAULT_EVENT_SUPPRESSION_LIMIT})",
    )
    parser.add_argument(
        "--min-level", action="append", metavar="COL=L", help="search from this level up"
    )
    relax_required(parser, "--quasi", "--hierarchy")


def _hierarchies(args: argparse.Namespace) -> tuple[dict[str, HierarchySource], dict[str, str]]:
    """The hierarchies given (built-in names or files read), and the files by column."""
    out: dict[str, HierarchySource] = {}
    files: dict[str, str] = {}
    for column, spec in pairs(args.hierarchy, "--hierarchy").items():
        if spec.lower() in BUILT_INS:
            out[column] = spec.lower()
        else:
            out[column] = read_hierarchy_file(spec, column, sep=args.hierarchy_sep)
            files[column] = spec
    return out, files


def _check_covered(
    data: LongitudinalData,
    hierarchies: dict[str, HierarchySource],
    files: dict[str, str],
    dates: Sequence[str],
) -> None:
    """Each hierarchy file covers its column's values (the one message of
    ``hierarchy_files``, naming the column and the file); date columns have the engine's
    own levels."""
    for column, path in files.items():
        hierarchy = hierarchies[column]
        if column in dates or not isinstance(hierarchy, Hierarchy):
            continue
        values = [data.person_values.get_column(column)] if column in data.person_quasi else []
        values += [t.values.get_column(column) for t in data.tables if column in t.quasi]
        check_covered(hierarchy, column, values, f"file {path}")


def _top(text: str) -> int | str | None:
    value = text.strip().lower()
    if value == "none":
        return None
    if value == "p95":
        return "p95"
    try:
        return int(value)
    except ValueError:
        raise EngineInputError(
            f"--event-count-top must be a count, p95 or none, not {text!r}"
        ) from None


def problem_from_args(args: argparse.Namespace, *, search: bool) -> LongitudinalProblem:
    """Read the files and build the longitudinal problem of the command line."""
    if getattr(args, "engine", "polars") != "polars":
        # the per-person count needs every person's events together: one machine's polars
        raise EngineInputError("--person runs on this machine's engine only (--engine polars)")
    person_quasi = names(args.quasi, "--quasi")
    event_quasi = names(args.event_quasi, "--event-quasi")
    dates = names(args.dates, "--dates")
    event_quasi += [d for d in dates if d not in event_quasi]
    na = getattr(args, "na", None)  # missing-value texts of every file given
    events = read_table(args.file, sep=args.sep, null_values=na).collect()
    persons: pl.DataFrame | None = None
    key = args.person_key or args.person
    if args.persons:
        persons = read_table(args.persons, sep=args.persons_sep, null_values=na).collect()
        # person-level QIs absent from the person table are read from the events
    elif args.person_key:
        raise EngineInputError("--person-key names the person column of --persons: give --persons")
    mode: DateMode = args.date_mode or ("anchored" if args.shift_days is not None else "absolute")
    # the derived person-level QIs may be named in --quasi (unless a column has the name)
    columns = {*events.columns, *(persons.columns if persons is not None else [])}
    derived = {EVENT_COUNT, *([ANCHOR] if dates and mode == "anchored" else [])} - columns
    named_count = EVENT_COUNT in derived and EVENT_COUNT in person_quasi
    person_quasi = [q for q in person_quasi if q not in derived]
    data = from_tables(
        persons=persons,
        person_key=key if persons is not None else args.person,
        person_quasi=person_quasi,
        # tables are named by their files in every message
        events=[EventTable(Path(args.file).name, events, args.person, tuple(event_quasi))],
        persons_name=Path(args.persons).name if args.persons else None,
    )
    if not dates and (args.date_mode or args.shift_days is not None):
        raise EngineInputError("--date-mode and --shift-days need --dates COL")
    hierarchies, files = _hierarchies(args)
    _check_covered(data, hierarchies, files, dates)
    wants_count = args.event_count or named_count or EVENT_COUNT in hierarchies
    problem = prepare(
        data,
        hierarchies=hierarchies,
        dates=DateSpec(tuple(dates), mode, args.shift_days) if dates else None,
        event_count=EventCountSpec(top=_top(args.event_count_top)) if wants_count else None,
        require_hierarchies=search,
    )
    if not problem.dimensions:
        raise EngineInputError(
            "no quasi-identifier: name person-level ones with --quasi, event-level ones with "
            "--event-quasi or --dates, or count events with --event-count"
        )
    return problem
