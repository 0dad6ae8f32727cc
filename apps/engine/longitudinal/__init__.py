"""Longitudinal and multi-level data: risk counted in persons (LONGITUDINAL.md, issue 25).

Pure polars/numpy/numba, no Django. Spec references ("§2.3") are to
``LONGITUDINAL.md``; its opening decisions apply: the per-person count is the *strict*
one (worst p-subset, k^m-anonymity with m = p inside each person-level class), counted
exactly or not at all.

How the wizard (or any caller) uses it
--------------------------------------
1. **Validate the data** (Step 1/2) into :class:`LongitudinalData`:

   * one long table: ``from_long_table(frame, person="pid", person_quasi=[...],
     event_quasi=[...])``;
   * a person table and event tables: ``from_tables(persons=frame_or_None,
     person_key="pid", person_quasi=[...], events=[EventTable(name, frame, person_col,
     (event QIs...)), ...])``.

   Both raise ``EngineInputError`` naming persons and column when a person-level column
   varies within a person, and naming the orphan ids of an event table. Before that,
   Step 2 can call ``suggest_levels(frame, person=..., columns=[...])`` (person-level =
   constant within every person) and ``looks_longitudinal(frame, identifiers=[...])``
   (an identifier with far fewer distinct values than rows: warn that no person is
   declared).

2. **Prepare the problem**: ``prepare(data, hierarchies={col: Hierarchy | "icd10" |
   "icd10:lenient" | "icd9cm" | "icd9cm:lenient" | "date"}, dates=DateSpec(columns,
   mode="absolute" | "anchored", shift_days=None | N), event_count=EventCountSpec(top=
   "p95" | N | None) or None, require_hierarchies=True for Step 7)`` →
   :class:`LongitudinalProblem`, whose ``dimensions`` are the lattice's QIs (person-level
   given QIs, derived ``event_count`` and ``anchor``, then event-level QIs, anchored dates
   as day intervals). ``Hierarchy`` objects come from ``apps.engine.hierarchies``
   (``read_arx_csv``/``parse_arx_text``), the ICD ones from :mod:`.codes`.

3. **Step 4**: ``measure(problem, levels={name: level} | None, power=3 | "all",
   target=0.2)`` → :class:`PersonRisk` (``counts`` per person in id order,
   ``min_class_size``, ``max_risk``, ``average_risk``, ``persons_at_risk``, ``by_power``
   for p = 1…5 and "all", ``to_dict()``). Raises :class:`CountingBudgetExceeded` (an
   ``EngineInputError`` with a message for the user) when the exact count would exceed
   ``subset_budget``.

4. **Step 7**: ``optimal_search(problem, criterion, power=3, suppression_limit=0.05,
   event_suppression_limit=0.05, min_levels=..., max_levels=..., pareto=True,
   progress=listener, cancel=event)`` with a criterion of ``apps.engine.criteria``
   (``KAnonymity``, ``MaxRisk``, ``StrictAverageRisk``) → :class:`LongitudinalSearchResult`
   (``solution``: :class:`NodeResult` with ``levels``, ``suppressed_persons``,
   ``suppressed_events``, ``information_loss``, risks; ``pareto`` alternatives).
   ``exhaustive_search`` is the reference. A :class:`Workspace` may be shared by measure
   and search calls on one problem (it caches the node's features and classes).

5. **Writing the release**: :mod:`.release` gives what a chosen node releases —
   ``node_release(problem, levels, criterion=..., power=..., budgets=Budgets(events,
   persons))`` → the persons kept and the events kept (input order) after the search's
   own suppression, ``budgets_reproducing`` the budgets under which the search found an
   alternative, ``generalized_labels`` each QI's value per person or per event. Keyed
   person pseudonyms and writing the file are the integration's part
   (``apps.assessments.longitudinal_release``).

Modules: :mod:`.formulas` (one function per formula), :mod:`.data`, :mod:`.codes`
(ICD-10, ICD-9-CM), :mod:`.dates`, :mod:`.problem`, :mod:`.features`, :mod:`.kernels`
(numba), :mod:`.evaluate`, :mod:`.released` (a node's figures as its release shows
them), :mod:`.measure`, :mod:`.search`, :mod:`.release`.
"""

from apps.engine.longitudinal.codes import (
    code_titles,
    icd9cm_hierarchy,
    icd10_hierarchy,
)
from apps.engine.longitudinal.data import (
    EventTable,
    LevelSuggestion,
    LongitudinalData,
    LongitudinalHint,
    from_long_table,
    from_tables,
    looks_longitudinal,
    suggest_levels,
)
from apps.engine.longitudinal.dates import ANCHOR, DateSpec, calendar_hierarchy
from apps.engine.longitudinal.evaluate import (
    DEFAULT_SUBSET_BUDGET,
    CountingBudgetExceeded,
    NodeOutcome,
    Workspace,
)
from apps.engine.longitudinal.formulas import ALL, REPORTED_POWERS, Power, parse_power
from apps.engine.longitudinal.measure import (
    DEFAULT_TARGET,
    PersonRisk,
    PowerRisk,
    measure,
    measure_by_power,
)
from apps.engine.longitudinal.problem import (
    BUILT_INS,
    EVENT_COUNT,
    Dimension,
    EventCountSpec,
    LongitudinalProblem,
    prepare,
)
from apps.engine.longitudinal.search import (
    DEFAULT_EVENT_SUPPRESSION_LIMIT,
    LongitudinalSearchResult,
    NodeResult,
    exhaustive_search,
    optimal_search,
)

__all__ = [
    "ALL",
    "ANCHOR",
    "BUILT_INS",
    "DEFAULT_EVENT_SUPPRESSION_LIMIT",
    "DEFAULT_SUBSET_BUDGET",
    "DEFAULT_TARGET",
    "EVENT_COUNT",
    "REPORTED_POWERS",
    "CountingBudgetExceeded",
    "DateSpec",
    "Dimension",
    "EventCountSpec",
    "EventTable",
    "LevelSuggestion",
    "LongitudinalData",
    "LongitudinalHint",
    "LongitudinalProblem",
    "LongitudinalSearchResult",
    "NodeOutcome",
    "NodeResult",
    "PersonRisk",
    "Power",
    "PowerRisk",
    "Workspace",
    "calendar_hierarchy",
    "code_titles",
    "exhaustive_search",
    "from_long_table",
    "from_tables",
    "icd9cm_hierarchy",
    "icd10_hierarchy",
    "looks_longitudinal",
    "measure",
    "measure_by_power",
    "optimal_search",
    "parse_power",
    "prepare",
    "suggest_levels",
]
