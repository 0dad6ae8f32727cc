"""Longitudinal reports of `measure` and `search` (risk counted in persons; issue 25).

    deid measure visits.csv --person pid --quasi sex,birth_year --event-quasi diag,admission \\
        --power 3 [--persons persons.csv --person-key pid] [--target 0.2] --json
    deid search visits.csv --person pid --quasi sex,birth_year --event-quasi diag \\
        --hierarchy sex=h_sex.csv --hierarchy birth_year=h_year.csv --hierarchy diag=icd10 \\
        --power 3 --k 5 [--suppression-limit 0.05] [--event-suppression-limit 0.05] --json

With ``--person`` the file is an event table (or a long table) and risk is counted per
person (apps.engine.longitudinal); without it `measure` and `search` are unchanged.
`measure_command` and `search_command` hand over to :func:`measure_report` /
:func:`search_report` when ``--person`` is given: the per-person risk, or the optimal node
with event and person suppression, as one JSON object or a few lines of text
(:func:`format_measure`, :func:`format_search`). The options and the problem they describe
are ``cli_longitudinal_args``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from apps.engine.cli_args import levels_option
from apps.engine.cli_longitudinal_args import problem_from_args
from apps.engine.criteria import DEFAULT_SUPPRESSION_LIMIT, Criterion
from apps.engine.errors import EngineInputError
from apps.engine.longitudinal import (
    DEFAULT_EVENT_SUPPRESSION_LIMIT,
    DEFAULT_SUBSET_BUDGET,
    DEFAULT_TARGET,
    LongitudinalProblem,
    measure,
    optimal_search,
    parse_power,
)
from apps.engine.longitudinal.preload import load_longitudinal_code


def _context(args: argparse.Namespace, problem: LongitudinalProblem) -> dict[str, Any]:
    return {
        "file": str(args.file),
        "persons_file": str(args.persons) if args.persons else None,
        "quasi": [d.name for d in problem.dimensions if d.scope == "person"],
        "event_quasi": [d.name for d in problem.dimensions if d.scope == "event"],
        "event_count_top": problem.event_count_top,
        "date_mode": None if problem.dates is None else problem.dates.mode,
        "shift_days": None if problem.dates is None else problem.dates.shift_days,
    }


def measure_report(args: argparse.Namespace) -> dict[str, Any]:
    """`measure --person …`: per-person risk (LONGITUDINAL.md §2.3-2.5)."""
    power = parse_power(args.power if args.power is not None else 3)
    target = DEFAULT_TARGET if args.target is None else args.target
    if not 0.0 < target <= 1.0:
        raise EngineInputError(f"--target must be in (0, 1], got {target}")
    problem = problem_from_args(args, search=False)
    load_longitudinal_code()  # once per process, like an import: not part of `seconds`
    started = time.perf_counter()
    risk = measure(
        problem,
        levels=levels_option(args.levels, "--levels"),
        power=power,
        target=target,
        subset_budget=args.subset_budget or DEFAULT_SUBSET_BUDGET,
    )
    report = _context(args, problem)
    report.update(risk.to_dict())
    report["seconds"] = round(time.perf_counter() - started, 6)
    return report


def format_measure(report: dict[str, Any]) -> str:
    lines = [
        f"{report['file']}: {report['persons']:,} persons, {report['events']:,} events "
        f"(risk counted in persons), adversary power {report['power']}",
        f"  person-level          {', '.join(report['quasi']) or '-'}",
        f"  event-level           {', '.join(report['event_quasi']) or '-'}",
        f"  smallest count        {report['min_class_size']:,}",
        f"  max risk              {report['max_risk']:.4f}",
        f"  average risk          {report['average_risk']:.4f}",
        f"  persons at risk       {report['persons_at_risk']:,} (above {report['target']:g})",
    ]
    for key, figures in report["by_power"].items():
        if figures.get("over_budget"):
            lines.append(f"  power {key:<5}           not counted: over the subset budget")
        else:
            lines.append(
                f"  power {key:<5}           max {figures['max_risk']:.4f}, "
                f"average {figures['average_risk']:.4f}"
            )
    lines.append(f"  computed in {report['seconds']:.3f} s")
    return "\n".join(lines)


def search_report(args: argparse.Namespace, criterion: Criterion) -> dict[str, Any]:
    """`search --person …`: the optimal node with event and person suppression (§3.2)."""
    if args.metric != "loss":
        raise EngineInputError(
            "with --person the search minimizes the information loss (--metric loss)"
        )
    if args.sensitive or args.criterion or args.sensitive_hierarchy:
        raise EngineInputError("--sensitive and --criterion are not available with --person")
    power = parse_power(args.power if args.power is not None else 3)
    problem = problem_from_args(args, search=True)
    load_longitudinal_code()  # once per process, like an import: not part of `seconds`
    started = time.perf_counter()
    limit = DEFAULT_SUPPRESSION_LIMIT if args.suppression_limit is None else args.suppression_limit
    event_limit = (
        DEFAULT_EVENT_SUPPRESSION_LIMIT
        if args.event_suppression_limit is None
        else args.event_suppression_limit
    )
    result = optimal_search(
        problem,
        criterion,
        power=power,
        suppression_limit=limit,
        event_suppression_limit=event_limit,
        min_levels=levels_option(args.min_level, "--min-level"),
        max_levels=levels_option(args.max_level, "--max-level"),
        subset_budget=args.subset_budget or DEFAULT_SUBSET_BUDGET,
        pareto=not args.no_pareto,
        time_budget=args.time_budget,
    )
    report = _context(args, problem)
    report.update(
        {
            "unit": "person",
            "persons": problem.persons,
            "events": problem.events,
            "power": result.power,
            "criterion": result.criterion,
            "k": result.k,
            "suppression_limit": limit,
            "event_suppression_limit": event_limit,
        }
    )
    solution = result.solution
    if solution is None:
        report.update(
            dict.fromkeys(
                (
                    "levels",
                    "min_class_size",
                    "suppressed_persons",
                    "suppressed_events",
                    "information_loss",
                    "max_risk",
                    "average_risk",
                )
            )
        )
    else:
        report.update(solution.to_dict())
        report.pop("passes")
    report.update(
        {
            "nodes_total": result.nodes_total,
            "nodes_evaluated": result.nodes_evaluated,
            "nodes_over_budget": result.nodes_over_budget,
            "optimal": result.optimal,
            "pareto": [p.to_dict() for p in result.pareto],
            "seconds": time.perf_counter() - started,
        }
    )
    return report


def format_search(report: dict[str, Any]) -> str:
    if report["levels"] is None:
        return (
            f"no solution meets {report['criterion']} (per person, power {report['power']}) "
            "within the suppression limits"
        )
    levels = ", ".join(f"{q}={lv}" for q, lv in report["levels"].items())
    return (
        f"{report['file']}: {report['criterion']} per person, adversary power {report['power']}\n"
        f"  levels              {levels}\n"
        f"  suppressed persons  {report['suppressed_persons']:,} of {report['persons']:,}\n"
        f"  suppressed events   {report['suppressed_events']:,} of {report['events']:,}\n"
        f"  smallest count      {report['min_class_size']}\n"
        f"  max / average risk  {report['max_risk']:.4f} / {report['average_risk']:.4f}\n"
        f"  information loss    {report['information_loss']:.6g}\n"
        f"  nodes evaluated     {report['nodes_evaluated']:,} of {report['nodes_total']:,}\n"
        f"  alternatives        {len(report['pareto'])}\n"
        f"  computed in {report['seconds']:.3f} s"
    )
