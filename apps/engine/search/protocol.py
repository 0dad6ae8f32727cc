"""One search timed the way ARX times ``ARXAnonymizer.anonymize()``.

The table is in memory as text (parsed) and the hierarchies are parsed (read, validated
and compiled to arrays: ``Hierarchy.compiled``); a run starts there and does everything a
search needs: encoding the quasi-identifiers (dictionary codes and distinct tuples),
looking their values up in the hierarchies, building the problem (with its sensitive
table, if any), the search, and the chosen solution's figures. Nothing is kept from one
run for the next: every run encodes, looks up and builds anew, and its problem has never
been searched. :func:`timed_search` is one run; ``deid search --repeat N`` and
``bench/bench_grid.py`` make N of them in one process (one warm-up, then the measured
runs, the median of which is reported, as ARX's published times are).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.criteria import Criterion
from apps.engine.encoded import EncodedData
from apps.engine.frame import encode
from apps.engine.hierarchies import GeneralizationLookup, Hierarchy, lookup_columns
from apps.engine.search.optimal import SearchResult, optimal_search
from apps.engine.search.problem import SearchProblem, problem_from_encoded
from apps.engine.search.sensitive import SensitiveTable, problem_with_sensitive
from apps.engine.sensitive import SensitiveModel


@dataclass(frozen=True)
class SensitiveSpec:
    """Privacy models on one sensitive column, with its hierarchy when one needs it."""

    column: str
    models: tuple[SensitiveModel, ...]
    hierarchy: Hierarchy | None = None


@dataclass(frozen=True)
class TimedSearch:
    """One run: what it built, the search's result, and its wall time in seconds."""

    encoded: EncodedData
    lookups: list[GeneralizationLookup]
    problem: SearchProblem
    sensitive: SensitiveTable | None
    result: SearchResult
    seconds: float


Encoder = Callable[[list[str]], EncodedData]


def table_encoder(data: pl.DataFrame) -> Encoder:
    """The encoding of columns of a table in memory (`apps.engine.frame.encode`)."""
    return lambda columns: encode(data, columns)


@dataclass(frozen=True)
class BuiltProblem:
    """The search problem built from the encoded table: its encoding, the hierarchies'
    look-ups of the encoded values, the problem and its sensitive table (if any)."""

    encoded: EncodedData
    lookups: list[GeneralizationLookup]
    problem: SearchProblem
    sensitive: SensitiveTable | None


def _lookups(
    encoded: EncodedData, quasi: Sequence[str], hierarchies: Mapping[str, Hierarchy]
) -> list[GeneralizationLookup]:
    """The hierarchies' look-ups of the encoded values of ``quasi`` (the first columns
    of ``encoded``), all in one compiled call, with the dictionaries' views when the
    encoding kept them (then let go of)."""
    found = lookup_columns([hierarchies[q] for q in quasi], encoded.dictionaries, encoded.views)
    encoded.views = None  # (they hold the table's buffers: not kept past the look-ups)
    return found


def build_problem(
    encoder: Encoder,
    quasi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    sensitive: SensitiveSpec | None = None,
) -> BuiltProblem:
    """Encode (``encoder`` gives the distinct tuples of some columns with their counts: the
    table in memory, or a cluster's histogram), look up and build the problem."""
    table: SensitiveTable | None = None
    if sensitive is not None:
        encoded = encoder([*quasi, sensitive.column])
        dictionaries = encoded.dictionaries
        lookups = _lookups(encoded, quasi, hierarchies)
        problem, table = problem_with_sensitive(
            encoded,
            lookups,
            [sensitive.column],
            list(sensitive.models),
            dictionaries=dictionaries,
            hierarchies={sensitive.column: sensitive.hierarchy} if sensitive.hierarchy else {},
        )
    else:
        encoded = encoder(list(quasi))
        lookups = _lookups(encoded, quasi, hierarchies)
        problem = problem_from_encoded(encoded, lookups)
    return BuiltProblem(encoded, lookups, problem, table)


def timed_search(
    data: pl.DataFrame | None,
    quasi: Sequence[str],
    hierarchies: Mapping[str, Hierarchy],
    criterion: Criterion,
    *,
    metric: str = "loss",
    suppression_limit: float,
    max_levels: Mapping[str, int] | None = None,
    time_budget: float | None = None,
    sensitive: SensitiveSpec | None = None,
    encoder: Encoder | None = None,
) -> TimedSearch:
    """Encode, look up, build and search, timed from the table in memory to the result
    (module docstring). ``encoder`` replaces the encoding of ``data`` (a cluster's
    histogram: ``data`` is then None)."""
    started = time.perf_counter()
    if encoder is None:
        if data is None:
            raise ValueError("timed_search needs the table or an encoder")
        encoder = table_encoder(data)
    built = build_problem(encoder, quasi, hierarchies, sensitive)
    result = optimal_search(
        built.problem,
        criterion,
        metric=metric,
        suppression_limit=suppression_limit,
        max_levels=max_levels,
        time_budget=time_budget,
        sensitive=built.sensitive,
    )
    return TimedSearch(
        built.encoded,
        built.lookups,
        built.problem,
        built.sensitive,
        result,
        time.perf_counter() - started,
    )


def median_of_measured(runs: Sequence[float]) -> float | None:
    """The median of the runs after the first (the warm-up), as ARX's published times;
    None with a single run."""
    return statistics.median(runs[1:]) if len(runs) > 1 else None
