"""The options of the `search` and `apply` commands and what they name, read before the
clock starts: the options both commands share (data file, quasi-identifiers and their
hierarchy files, the target as k, a maximum risk or a release model, suppression limit,
metric, sensitive column and its privacy models, the engine), each parsed into what the
engine takes (masking methods, the criterion, the sensitive models; names, ``COL=VALUE``
pairs and levels by ``cli_args``, as every command reads them) with a one-line
``EngineInputError`` when it is wrong; then the files they name
read, hierarchies parsed and compiled and checked against the data (``Inputs``). The
commands themselves and the reports they print or write as JSON are ``cli_search``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from apps.engine.cli_args import names, pairs
from apps.engine.cli_engine import add_engine_arguments, on_cluster
from apps.engine.criteria import (
    DEFAULT_CAP,
    DEFAULT_SUPPRESSION_LIMIT,
    Criterion,
    KAnonymity,
    MaxRisk,
    criterion_for_release,
)
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import Hierarchy
from apps.engine.hierarchy_files import check_covered, read_hierarchy_file
from apps.engine.loss import METRICS
from apps.engine.masking import MASK_METHODS, MaskMethod
from apps.engine.reading import read_table
from apps.engine.search.preload import load_compiled_code, load_sensitive_code
from apps.engine.search.protocol import SensitiveSpec
from apps.engine.sensitive import SensitiveModel, parse_model


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="CSV/TSV or Parquet file")
    parser.add_argument("--quasi", action="append", required=True, metavar="COL[,COL...]")
    parser.add_argument(
        "--hierarchy",
        action="append",
        required=True,
        metavar="COL=PATH",
        help="ARX-format hierarchy (value;level1;...;*) per quasi-identifier",
    )
    parser.add_argument("--sep", help="CSV separator of FILE (default: sniffed)")
    parser.add_argument(
        "--hierarchy-sep",
        help="separator of hierarchy files (default ';', or the file's own when it has no ';')",
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--k", type=int, help="k-anonymity: smallest released class")
    target.add_argument("--max-risk", type=float, help="maximum risk (k = ceil(1/R))")
    target.add_argument(
        "--release-model",
        choices=("public", "semi_public", "non_public"),
        help="with --threshold and --context-risk (Steps 1, 3, 5, 6)",
    )
    parser.add_argument("--threshold", type=float)
    parser.add_argument("--context-risk", type=float, default=1.0)
    parser.add_argument("--cap", type=float, default=DEFAULT_CAP, help="strict average cap")
    parser.add_argument(
        "--suppression-limit", type=float, default=DEFAULT_SUPPRESSION_LIMIT, metavar="FRACTION"
    )
    parser.add_argument("--metric", choices=METRICS, default="loss")
    parser.add_argument("--max-level", action="append", metavar="COL=L")
    parser.add_argument("--time-budget", type=float, metavar="SECONDS")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--sensitive", metavar="COL", help="sensitive column the --criterion options apply to"
    )
    parser.add_argument(
        "--criterion",
        action="append",
        metavar="SPEC",
        help="privacy model on --sensitive: distinct-l=L, entropy-l=L (Shannon), "
        "recursive-cl=C,L, equal-t=T, hierarchical-t=T, ordered-t=T (numeric column)",
    )
    parser.add_argument(
        "--sensitive-hierarchy",
        metavar="PATH",
        help="ARX-format hierarchy of --sensitive (for hierarchical-t)",
    )
    add_engine_arguments(parser)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def criterion_from_args(args: argparse.Namespace) -> Criterion:
    if args.k is not None:
        if args.k < 1:
            raise EngineInputError(f"--k must be at least 1, got {args.k}")
        return KAnonymity(args.k)
    if args.max_risk is not None:
        return MaxRisk(args.max_risk)
    if args.threshold is None:
        raise EngineInputError("--release-model needs --threshold (and --context-risk)")
    return criterion_for_release(args.release_model, args.threshold, args.context_risk, args.cap)


def sensitive_models(args: argparse.Namespace) -> list[SensitiveModel]:
    """The --criterion models on the --sensitive column (checked before reading data)."""
    specs = args.criterion or []
    if args.sensitive is None:
        if specs or args.sensitive_hierarchy:
            raise EngineInputError("--criterion and --sensitive-hierarchy need --sensitive COL")
        return []
    if not specs:
        raise EngineInputError(f"--sensitive {args.sensitive}: give at least one --criterion")
    if args.sensitive in names(args.quasi, "--quasi"):
        raise EngineInputError(
            f"{args.sensitive!r} is a quasi-identifier; a sensitive column must not be one"
        )
    models = [parse_model(args.sensitive, spec) for spec in specs]
    if any(m.needs_hierarchy for m in models) and not args.sensitive_hierarchy:
        raise EngineInputError("hierarchical-t needs --sensitive-hierarchy PATH")
    return models


@dataclass(frozen=True)
class Inputs:
    """What is read before the clock starts: the table (in memory, as read), the
    quasi-identifiers, their hierarchies parsed and compiled, the sensitive models."""

    data: pl.DataFrame | None  # None: the rows stay on the cluster (--engine spark)
    quasi: list[str]
    hierarchies: dict[str, Hierarchy]
    sensitive: SensitiveSpec | None


def read_inputs(args: argparse.Namespace) -> Inputs:
    """Read the file and the hierarchies (not timed) and load the compiled code."""
    quasi = names(args.quasi, "--quasi")
    if not quasi:
        raise EngineInputError("--quasi names no column")
    paths = pairs(args.hierarchy, "--hierarchy")
    missing = [q for q in quasi if q not in paths]
    if missing:
        raise EngineInputError(f"no --hierarchy for: {', '.join(missing)}")
    models = sensitive_models(args)
    hierarchies = {q: read_hierarchy_file(paths[q], q, sep=args.hierarchy_sep) for q in quasi}
    sensitive_hierarchy = (
        read_hierarchy_file(
            args.sensitive_hierarchy,
            args.sensitive,
            sep=args.hierarchy_sep,
            option="--sensitive-hierarchy",
        )
        if args.sensitive_hierarchy
        else None
    )
    for hierarchy in hierarchies.values():
        hierarchy.compiled  # noqa: B018 (parsing a hierarchy ends with its arrays)
    data = (
        None
        if on_cluster(args)
        else read_table(args.file, sep=args.sep).collect().rechunk()  # (one chunk per column)
    )
    if data is not None:
        # each file covers its column (the one message of hierarchy_files, naming both)
        for q in quasi:
            if q in data.columns:
                check_covered(hierarchies[q], q, [data.get_column(q)], f"file {paths[q]}")
        if sensitive_hierarchy is not None and args.sensitive in data.columns:
            column = data.get_column(args.sensitive)
            source = f"file {args.sensitive_hierarchy}"
            check_covered(sensitive_hierarchy, args.sensitive, [column], source)
    load_compiled_code()  # once per process, like an import: not part of `seconds`
    if models:
        load_sensitive_code()
    spec = SensitiveSpec(args.sensitive, tuple(models), sensitive_hierarchy) if models else None
    return Inputs(data, quasi, hierarchies, spec)


def direct_methods(groups: Sequence[str] | None) -> dict[str, MaskMethod]:
    out: dict[str, MaskMethod] = {}
    for item in names(groups, "--direct"):
        name, _, method = (p.strip() for p in item.partition("="))
        if not name:
            raise EngineInputError(f"--direct: blank column name in {item!r}")
        method = method or "remove"
        if method not in MASK_METHODS:
            raise EngineInputError(f"--direct {name}: unknown method {method!r}")
        out[name] = method  # type: ignore[assignment,unused-ignore]
    return out
