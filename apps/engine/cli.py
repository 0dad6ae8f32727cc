"""Command line of the engine: `python -m apps.engine.cli <command> ...`.

    python -m apps.engine.cli measure adult.csv --quasi sex,age,race --json

Adding commands (how Engine II plugs in `search` and `apply`): every module named
in SUBCOMMAND_MODULES defines `register(subparsers) -> None`, which adds its
parsers with `subparsers.add_parser(...)` and sets on each
`set_defaults(handler=fn)` where `fn(args: argparse.Namespace) -> int` returns
the exit code.  A listed module that does not exist yet is skipped.  Handlers may
raise EngineError: main prints its one-line message on stderr and exits with 2,
as it does for bad arguments.  The Django command `manage.py deid …` only
forwards its arguments to `main`.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from typing import Any, NoReturn

from apps.engine import cli_longitudinal, cli_longitudinal_args
from apps.engine.attribute import l_diversity
from apps.engine.cli_args import names
from apps.engine.cli_engine import (
    add_engine_arguments,
    cluster_histogram,
    engine_session,
    on_cluster,
    row_engine,
    source_of,
)
from apps.engine.context import data_risk_target
from apps.engine.errors import EngineError, EngineInputError
from apps.engine.frame import encode
from apps.engine.population import (
    ARX_DEFAULT_THRESHOLD,
    MODEL_NAMES,
    SizeHistogram,
    attacker_models,
    get_region,
    population_uniqueness,
    uniqueness_curve,
)
from apps.engine.reading import read_table
from apps.engine.risk import (
    ALLOWED_STRICT_AVERAGE_CAPS,
    DEFAULT_STRICT_AVERAGE_CAP,
    RELEASE_MODELS,
    encoded_class_sizes,
    records_at_risk,
    risk_profile,
)
from apps.engine.threshold import LEVELS, PROFILES, RiskThreshold, custom_threshold, threshold_for

PROG = "deid"
SUBCOMMAND_MODULES: list[str] = [
    "apps.engine.cli_search",
    "apps.engine.cli_warmup",
    "apps.engine.cli_engine",
]
Handler = Callable[[argparse.Namespace], int]


class UsageError(Exception):
    """Bad command-line arguments (reported on one line, exit code 2)."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage and exits; we want one line and a return code.
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


# --------------------------------------------------------------------------- measure


def register(subparsers: Any) -> None:
    """Register `measure` (Step 4 figures of a file)."""
    parser = subparsers.add_parser(
        "measure", help="measure the re-identification risk of a file (Step 4)"
    )
    parser.add_argument("file", help="CSV/TSV or Parquet file")
    parser.add_argument(
        "--quasi", action="append", required=True, metavar="COL[,COL...]", help="quasi-identifiers"
    )
    parser.add_argument("--sep", help="CSV separator (default: sniffed from the header)")
    parser.add_argument("--na", action="append", metavar="VALUE", help="extra missing-value text")
    parser.add_argument("--release-model", choices=RELEASE_MODELS)
    parser.add_argument(
        "--sensitive", action="append", nargs="+", metavar="COL", help="sensitive columns"
    )
    parser.add_argument(
        "--cap",
        type=float,
        default=DEFAULT_STRICT_AVERAGE_CAP,
        help="strict average cap: 0.33 (default) or 0.5",
    )
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--threshold", type=float, help="risk threshold (custom value)")
    target.add_argument(
        "--invasion-of-privacy", choices=LEVELS, help="threshold from the profile's table"
    )
    parser.add_argument("--profile", default="ontario_ipc_2016", choices=sorted(PROFILES))
    parser.add_argument(
        "--context-risk",
        type=float,
        default=1.0,
        help="context risk (Step 5); the data-risk target is threshold / context",
    )
    population = parser.add_mutually_exclusive_group()
    population.add_argument(
        "--population",
        type=int,
        metavar="N",
        help="the release is a sample of N people: estimate population uniques "
        "(Pitman, Zayatz, SNB, Dankar's rule) and report the attacker models",
    )
    population.add_argument(
        "--population-region",
        metavar="NAME",
        help="as --population, with a preset region's size (e.g. Ontario, canada-2021, USA)",
    )
    parser.add_argument(
        "--population-curve",
        action="store_true",
        help="with a population: also the estimates at ARX's sampling fractions 1e-7 … 0.9",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    cli_longitudinal_args.add_measure_options(parser)  # --person: risk counted per person
    add_engine_arguments(parser)
    parser.set_defaults(handler=measure_command)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Compute the measure report as a JSON-ready dict."""
    if args.cap not in ALLOWED_STRICT_AVERAGE_CAPS:
        raise EngineInputError(f"--cap must be 0.33 or 0.5, not {args.cap}")
    quasi = names(args.quasi, "--quasi")
    sensitive = names([g for given in args.sensitive or [] for g in given], "--sensitive")
    started = time.perf_counter()
    frame = None if on_cluster(args) else read_table(args.file, sep=args.sep, null_values=args.na)
    encoded = cluster_histogram(args, quasi) if frame is None else encode(frame, quasi)
    profile = risk_profile(encoded_class_sizes(encoded), cap=args.cap)
    report: dict[str, Any] = {"file": str(args.file), "quasi": list(encoded.quasi)}
    report.update(profile.to_dict())
    report["distinct_tuples"] = encoded.distinct_tuples
    if args.release_model:
        report["release_model"] = args.release_model
        report["data_risk"] = profile.data_risk(args.release_model)
    threshold = _threshold(args)
    if threshold is not None:
        target = data_risk_target(threshold.value, args.context_risk)
        at_risk = records_at_risk(encoded_class_sizes(encoded), target)
        report["threshold"] = {
            "value": threshold.value,
            "origin": threshold.origin,
            "source": threshold.source,
            "invasion_of_privacy": threshold.invasion_of_privacy,
            "context_risk": args.context_risk,
            "data_risk_target": target,
        }
        report["records_at_risk"] = {
            "target": target,
            "rows": at_risk.rows,
            "percent": at_risk.percent,
            "classes": at_risk.classes,
        }
        if args.release_model:
            report["meets_target"] = profile.data_risk(args.release_model) <= target + 1e-12
    if args.population is not None or args.population_region:
        report.update(_population_report(args, profile.class_size_counts, report))
    if sensitive:
        diversity = (
            l_diversity(frame, quasi, sensitive)
            if frame is not None
            else row_engine(args).l_diversity(source_of(args), quasi, sensitive)
        )
        report["l_diversity"] = [d.to_dict() for d in diversity]
    report["seconds"] = round(time.perf_counter() - started, 6)
    return report


def _population_report(
    args: argparse.Namespace, counts: tuple[tuple[int, int], ...], report: dict[str, Any]
) -> dict[str, Any]:
    """`population` and `attacker_models` of the report (issue #17).

    Records at risk of the attacker models are counted against the data-risk target
    when a threshold was given, else against ARX's default of 0.2.
    """
    histogram = SizeHistogram.from_counts(counts)
    if args.population_region:
        region = get_region(args.population_region)
        size, origin = region.size, region.to_dict()
    else:
        size, origin = args.population, None
    estimate = population_uniqueness(histogram, size).to_dict()
    estimate["region"] = origin
    if args.population_curve:
        estimate["curve"] = [point.to_dict() for point in uniqueness_curve(histogram)]
    target = report.get("threshold", {}).get("data_risk_target", ARX_DEFAULT_THRESHOLD)
    return {
        "population": estimate,
        "attacker_models": attacker_models(histogram, target).to_dict(),
    }


def _threshold(args: argparse.Namespace) -> RiskThreshold | None:
    if args.invasion_of_privacy:
        return threshold_for(args.invasion_of_privacy, args.profile)
    if args.threshold is not None:
        return custom_threshold(args.threshold, "given on the command line")
    return None


def measure_command(args: argparse.Namespace) -> int:
    if args.person:
        report = cli_longitudinal.measure_report(args)
        print(
            json.dumps(report, ensure_ascii=False)
            if args.json
            else cli_longitudinal.format_measure(report)
        )
        return 0
    cli_longitudinal_args.check_single_table(args, ["quasi"])
    report = measure(args)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(format_measure(report))
    return 0


def format_measure(report: dict[str, Any]) -> str:
    lines = [
        f"{report['file']}: {report['rows']:,} rows, quasi-identifiers: {', '.join(report['quasi'])}",
        f"  equivalence classes   {report['equivalence_classes']:,}",
        f"  smallest class        {report['min_class_size']:,}",
        f"  unique rows           {report['uniques']:,}",
        f"  max risk              {report['max_risk']:.4f}",
        f"  average risk          {report['average_risk']:.4f}",
        f"  strict average risk   {report['strict_average_risk']:.4f} (cap {report['strict_average_cap']})",
        "  class sizes           "
        + "  ".join(
            f"{size}: {b['classes']:,} classes / {b['rows']:,} rows"
            for size, b in report["class_size_histogram"].items()
        ),
    ]
    if "data_risk" in report:
        lines.append(f"  data risk ({report['release_model']})  {report['data_risk']:.4f}")
    if "records_at_risk" in report:
        r = report["records_at_risk"]
        lines.append(
            f"  records at risk       {r['rows']:,} ({r['percent']:.2f}%) above target {r['target']:.4g}"
        )
    if "population" in report:
        lines.extend(_format_population(report["population"], report["attacker_models"]))
    for d in report.get("l_diversity", []):
        lines.append(
            f"  l-diversity {d['column']}: smallest l {d['smallest_l']}, "
            f"{d['homogeneous_classes']:,} homogeneous classes ({d['homogeneous_rows']:,} rows)"
        )
    lines.append(f"  computed in {report['seconds']:.3f} s")
    return "\n".join(lines)


def _format_population(population: dict[str, Any], attackers: dict[str, Any]) -> list[str]:
    region = population.get("region")
    where = f" ({region['name']})" if region else ""
    lines = [
        f"  population            {population['size']:,}{where}, "
        f"sampling fraction {population['sampling_fraction']:.6g}"
    ]
    for key, name in MODEL_NAMES.items():
        estimate = population[key]
        figure = (
            f"{estimate['uniques']:,.0f} population uniques "
            f"({100 * estimate['fraction']:.4g}% of the population)"
            if estimate["available"]
            else "not available (no solution found)"
        )
        lines.append(f"  {name + ' estimate':<22}{figure}")
    model = population["dankar"]["model"]
    chosen = MODEL_NAMES[model] if model else "nothing to estimate (no sample uniques)"
    lines.append(f"  Dankar's rule picks   {chosen}")
    for key in ("prosecutor", "journalist"):
        risk = attackers[key]
        lines.append(
            f"  {key + ' risk':<22}highest {risk['highest']:.4f}, records at risk "
            f"{100 * risk['records_at_risk']:.2f}% (above {attackers['threshold']:.4g}), "
            f"success rate {risk['success_rate']:.4f}"
        )
    lines.append(
        f"  marketer risk         success rate {attackers['marketer']['success_rate']:.4f}"
    )
    return lines


# --------------------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="deidweb engine: risk-based de-identification")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    register(subparsers)
    for name in SUBCOMMAND_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        module = importlib.import_module(name)
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        handler: Handler = args.handler
        with engine_session(args):
            return handler(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except EngineError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help / --version
        return exc.code if isinstance(exc.code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
