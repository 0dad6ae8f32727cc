"""The `search` and `apply` commands (registered into cli.py through SUBCOMMAND_MODULES):
each runs on the inputs its options name (read in ``cli_search_args``, before the clock
starts) and builds its report, one JSON object with ``--json`` or a few lines of text:
for `search` the optimum's levels and figures, the alternatives under smaller suppression
budgets and the timing; for `apply` the file written and its measure. With ``--person``
`search` is counted per person (``cli_longitudinal``, its options in
``cli_longitudinal_args``).

    python -m apps.engine.cli search adult.csv --sep ';' --quasi sex,age,race \\
        --hierarchy age=h_age.csv --hierarchy sex=h_sex.csv --hierarchy race=h_race.csv \\
        --k 5 --suppression-limit 0.05 --metric loss --json
    python -m apps.engine.cli apply adult.csv ... --levels age=2,sex=0,race=1 --out out.parquet

`seconds` in the output is the wall time from the data in memory to the result
(encoding, hierarchy look-ups, the problem, the search and the solution's figures:
``search/protocol.py``), not reading the file and the hierarchies nor loading the compiled
search code (``search/preload.py``, once per process). ``--repeat N`` runs that timed part
N times in the process, each from the table of strings again (ARX's protocol: a warm-up,
then measured runs); ``seconds`` stays the first run, ``seconds_runs`` lists every run and
``seconds_median`` is the median of runs 2..N.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from apps.engine import cli_longitudinal, cli_longitudinal_args
from apps.engine.apply import apply_solution
from apps.engine.cli_args import levels_option
from apps.engine.cli_engine import (
    add_manifest_argument,
    apply_on_cluster,
    cluster_histogram,
    manifest_report,
)
from apps.engine.cli_search_args import (
    Inputs,
    add_common_arguments,
    criterion_from_args,
    direct_methods,
    positive,
    read_inputs,
)
from apps.engine.criteria import Criterion
from apps.engine.errors import EngineInputError
from apps.engine.loss import EntropyMetric, entropy_percent, prepare_metric
from apps.engine.masking import MASK_METHODS
from apps.engine.search import NodeResult, optimal_search
from apps.engine.search.optimal import describe
from apps.engine.search.protocol import (
    Encoder,
    build_problem,
    median_of_measured,
    table_encoder,
    timed_search,
)
from apps.engine.search.report import node_missingness

#: Alternatives shown by `search`: the optimum under these fractions of the limit.
PARETO_BUDGETS = (0.75, 0.5, 0.25, 0.1, 0.0)


def register(subparsers: Any) -> None:
    """Add `search` and `apply` to the engine's command line."""
    search = subparsers.add_parser("search", help="find the optimal generalization (Step 7)")
    add_common_arguments(search)
    cli_longitudinal_args.add_search_options(search)  # --person: risk counted per person
    search.add_argument("--no-pareto", action="store_true", help="skip the alternatives")
    search.add_argument(
        "--repeat",
        type=positive,
        default=1,
        metavar="N",
        help="run the timed part N times (ARX's protocol: the first a warm-up); adds "
        "seconds_runs and seconds_median (runs 2..N) to the output",
    )
    search.set_defaults(handler=search_command)
    apply = subparsers.add_parser("apply", help="write the de-identified data set (Step 7)")
    add_common_arguments(apply)
    apply.add_argument("--levels", action="append", metavar="COL=L[,COL=L...]")
    apply.add_argument("--out", required=True, help="output file: .parquet or .csv")
    apply.add_argument(
        "--direct",
        action="append",
        metavar="COL[=METHOD]",
        help=f"direct identifier and its masking ({', '.join(MASK_METHODS)}; default remove)",
    )
    apply.add_argument("--seed", type=int, help="fixed shuffle seed (tests only)")
    add_manifest_argument(apply)
    apply.set_defaults(handler=apply_command)


def _timed(args: argparse.Namespace, inputs: Inputs, criterion: Criterion) -> Any:
    return timed_search(
        inputs.data,
        inputs.quasi,
        inputs.hierarchies,
        criterion,
        metric=args.metric,
        suppression_limit=args.suppression_limit,
        max_levels=levels_option(args.max_level, "--max-level"),
        time_budget=args.time_budget,
        sensitive=inputs.sensitive,
        encoder=_encoder(args, inputs),
    )


def _encoder(args: argparse.Namespace, inputs: Inputs) -> Encoder:
    """The table's encoding: in memory, or the cluster's histogram (--engine spark)."""
    data = inputs.data
    if data is None:
        return lambda columns: cluster_histogram(args, columns)
    return table_encoder(data)


def _node_json(quasi: Sequence[str], node: NodeResult) -> dict[str, Any]:
    return {
        "levels": dict(zip(quasi, node.levels, strict=True)),
        "suppressed_rows": node.suppressed_rows,
        "equivalence_classes": node.equivalence_classes,
        "min_class_size": node.min_class_size,
        "max_risk": node.max_risk,
        "average_risk": node.average_risk,
        "information_loss": node.information_loss,
    }


def search_report(args: argparse.Namespace) -> dict[str, Any]:
    inputs = read_inputs(args)
    criterion = criterion_from_args(args)
    first = _timed(args, inputs, criterion)
    runs = [first.seconds]
    for _ in range(getattr(args, "repeat", 1) - 1):
        runs.append(_timed(args, inputs, criterion).seconds)
    problem, table, result, seconds = first.problem, first.sensitive, first.result, first.seconds
    pareto: tuple[NodeResult, ...] = ()
    if not args.no_pareto and result.solution is not None and result.optimal:
        # Alternatives: the optimum under smaller suppression budgets (not timed above).
        pareto = optimal_search(
            problem,
            criterion,
            metric=args.metric,
            suppression_limit=args.suppression_limit,
            max_levels=levels_option(args.max_level, "--max-level"),
            time_budget=args.time_budget,
            pareto=PARETO_BUDGETS,
            sensitive=table,
        ).pareto
    report: dict[str, Any] = {
        "file": str(args.file),
        "quasi": list(problem.quasi),
        "rows": problem.rows,
        "distinct_tuples": len(problem.counts),
        "criterion": result.criterion,
        "release_size": criterion.release_size if table is None else table.release_size(criterion),
        "sensitive": None if table is None else args.sensitive,
        "sensitive_criteria": [] if table is None else [m.spec() for m in table.models],
        "metric": result.metric,
        "suppression_limit": args.suppression_limit,
    }
    if result.solution is None:
        report.update(dict.fromkeys(("levels", "information_loss"), None))
        report["suppressed_rows"] = None
    else:
        report.update(_node_json(problem.quasi, result.solution))
        levels = result.solution.levels
        missing = (
            node_missingness(problem, levels, criterion.release_size)
            if table is None
            else node_missingness(
                problem, levels, 0, suppressed=table.tuple_suppressed(problem, levels, criterion)
            )
        )
        report["missingness"] = {"records": missing.records, "cells": missing.cells}
        if result.metric == "entropy":
            metric = prepare_metric("entropy", problem)
            assert isinstance(metric, EntropyMetric)
            report["entropy_percent"] = entropy_percent(
                result.solution.information_loss, metric.maximum()
            )
    report.update(
        {
            "nodes_total": result.nodes_total,
            "nodes_evaluated": result.nodes_evaluated,
            "optimal": result.optimal,
            "search_seconds": result.seconds,
            "seconds": seconds,
            "pareto": [_node_json(problem.quasi, p) for p in pareto],
        }
    )
    if len(runs) > 1:
        report["seconds_runs"] = runs
        report["seconds_median"] = median_of_measured(runs)
    return report


def search_command(args: argparse.Namespace) -> int:
    if args.person:
        report = cli_longitudinal.search_report(args, criterion_from_args(args))
        print(
            json.dumps(report, ensure_ascii=False)
            if args.json
            else cli_longitudinal.format_search(report)
        )
        return 0
    cli_longitudinal_args.check_single_table(args, ["quasi", "hierarchy"])
    report = search_report(args)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
        return 0
    if report["levels"] is None:
        print(f"no solution meets {report['criterion']} within the suppression limit")
        return 0
    levels = ", ".join(f"{q}={lv}" for q, lv in report["levels"].items())
    print(
        f"{report['file']}: {report['criterion']}, metric {report['metric']}\n"
        f"  levels              {levels}\n"
        f"  suppressed rows     {report['suppressed_rows']:,} of {report['rows']:,}\n"
        f"  classes             {report['equivalence_classes']:,} (smallest "
        f"{report['min_class_size']})\n"
        f"  max / average risk  {report['max_risk']:.4f} / {report['average_risk']:.4f}\n"
        f"  information loss    {report['information_loss']:.6g}\n"
        f"  nodes evaluated     {report['nodes_evaluated']:,} of {report['nodes_total']:,}"
        f"{'' if report['optimal'] else ' (time budget reached: best found, not proven optimal)'}\n"
        f"  alternatives        {len(report['pareto'])}\n"
        f"  computed in {report['seconds']:.3f} s"
    )
    return 0


def apply_report(args: argparse.Namespace) -> dict[str, Any]:
    inputs = read_inputs(args)
    started = time.perf_counter()
    built = build_problem(
        _encoder(args, inputs), inputs.quasi, inputs.hierarchies, inputs.sensitive
    )
    data, encoded, lookups = inputs.data, built.encoded, built.lookups
    problem, table = built.problem, built.sensitive
    criterion = criterion_from_args(args)
    levels = levels_option(args.levels, "--levels")
    if not levels:
        result = optimal_search(
            problem,
            criterion,
            metric=args.metric,
            suppression_limit=args.suppression_limit,
            max_levels=levels_option(args.max_level, "--max-level"),
            time_budget=args.time_budget,
            sensitive=table,
        )
        if result.levels is None:
            raise EngineInputError("no solution meets the criterion; give --levels explicitly")
        levels = result.levels
    unknown = [c for c in levels if c not in problem.quasi]
    if unknown:
        raise EngineInputError(f"--levels names non-quasi-identifier(s): {', '.join(unknown)}")
    dictionaries = encoded.dictionaries[: len(lookups)]
    extra: dict[str, Any] = {}
    if data is None:
        done = apply_on_cluster(
            args,
            problem=problem,
            lookups=lookups,
            dictionaries=dictionaries,
            levels=levels,
            criterion=criterion,
            direct=direct_methods(args.direct),
            sensitive=table,
        )
        m, out, secrets = done.measure, done.written.location, done.written.secrets
        extra = manifest_report(done)
    else:
        applied = apply_solution(
            data,
            problem=problem,
            lookups=lookups,
            dictionaries=dictionaries,
            levels=levels,
            criterion=criterion,
            out=args.out,
            suppression_limit=args.suppression_limit,
            direct=direct_methods(args.direct),
            seed=args.seed,
            sensitive=table,
        )
        m, out, secrets = applied.measure, str(applied.path), applied.secrets
    report: dict[str, Any] = {
        "out": out,
        "levels": m.levels,
        "rows_in": m.rows_in,
        "rows_out": m.rows_out,
        "suppressed_rows": m.suppressed_rows,
        "passes": m.passes,
        "criterion": describe(criterion, table),
        "information_loss": m.information_loss,
        "seconds": time.perf_counter() - started,
        **extra,
    }
    report.update(m.risk.to_dict())
    if secrets.keys or secrets.linking_tables:
        report["secrets"] = "keys/linking tables were generated: store them apart (API only)"
    return report


def apply_command(args: argparse.Namespace) -> int:
    report = apply_report(args)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(
            f"wrote {report['out']}: {report['rows_out']:,} rows "
            f"({report['suppressed_rows']:,} suppressed), smallest class "
            f"{report['min_class_size']}, max risk {report['max_risk']:.4f}, "
            f"{'meets' if report['passes'] else 'does NOT meet'} {report['criterion']}"
        )
    return 0
