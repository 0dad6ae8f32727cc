"""The command line's engine options, shared by `measure`, `search` and `apply`, and the
`verify` command (a release's files against its manifest).

    deid measure table:claims --quasi sex,age --engine spark --spark-remote sc://host:15002
    deid apply /data/claims.parquet ... --engine spark --spark-remote sc://host:15002 \\
        --out /data/releases/claims-v1 --manifest claims-v1.manifest.json
    deid verify claims-v1.manifest.json --engine spark --spark-remote sc://host:15002

With ``--engine spark`` the row passes run on the Spark Connect server and FILE is a
path that server reads (a Parquet file or folder, a CSV file, ``delta:PATH``) or
``table:NAME``; the printed JSON is the polars engine's. The remote may also come from
``DEIDWEB_SPARK_REMOTE``. The engine is opened once per command (`row_engine`) and
closed by `engine_session`, which `cli.main` wraps around every handler.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl

from apps.engine.criteria import Criterion
from apps.engine.encoded import EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import GeneralizationLookup
from apps.engine.masking import MaskMethod
from apps.engine.rows import (
    ENGINES,
    ReleaseManifest,
    RowEngine,
    RowsRelease,
    TableSource,
    open_engine,
    release_solution,
)
from apps.engine.search.problem import SearchProblem
from apps.engine.search.sensitive import SensitiveTable

REMOTE_ENV = "DEIDWEB_SPARK_REMOTE"
_OPENED = "_deidweb_rows_engine"


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """--engine and --spark-remote (every command that reads rows)."""
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="polars",
        help="where the row passes run: polars on this machine (default) or a Spark cluster",
    )
    parser.add_argument(
        "--spark-remote",
        metavar="sc://HOST:PORT",
        default=None,
        help=f"Spark Connect server of --engine spark (default: ${REMOTE_ENV})",
    )


def on_cluster(args: argparse.Namespace) -> bool:
    return getattr(args, "engine", "polars") == "spark"


def row_engine(args: argparse.Namespace) -> RowEngine:
    """The command's engine, opened at first use and closed by `engine_session`."""
    engine: RowEngine | None = getattr(args, _OPENED, None)
    if engine is None:
        remote = getattr(args, "spark_remote", None)
        if on_cluster(args):
            remote = remote or os.environ.get(REMOTE_ENV) or None
        engine = open_engine(getattr(args, "engine", "polars"), remote=remote)
        setattr(args, _OPENED, engine)
    return engine


@contextmanager
def engine_session(args: argparse.Namespace) -> Iterator[None]:
    try:
        yield
    finally:
        engine: RowEngine | None = getattr(args, _OPENED, None)
        if engine is not None:
            setattr(args, _OPENED, None)
            engine.close()


def source_of(args: argparse.Namespace) -> TableSource:
    """FILE as a source: a path, or ``table:NAME`` (and other prefixes) on a cluster."""
    text = str(args.file)
    na: Sequence[str] = getattr(args, "na", None) or ()
    if not on_cluster(args):
        return TableSource(path=text, sep=args.sep, null_values=tuple(na))
    return TableSource.parse(text, sep=args.sep, null_values=na)


def cluster_histogram(args: argparse.Namespace, columns: Sequence[str]) -> EncodedData:
    """The class histogram of FILE over ``columns``, counted on the cluster."""
    return row_engine(args).histogram(source_of(args), columns)


def apply_on_cluster(
    args: argparse.Namespace,
    *,
    problem: SearchProblem,
    lookups: Sequence[GeneralizationLookup],
    dictionaries: Sequence[pl.Series],
    levels: dict[str, int],
    criterion: Criterion,
    direct: dict[str, MaskMethod],
    sensitive: SensitiveTable | None,
) -> RowsRelease:
    """`apply` on the cluster: the release at --out (a path the cluster writes), its
    manifest written to --manifest (a local JSON file) when given."""
    done = release_solution(
        row_engine(args),
        source_of(args),
        problem=problem,
        lookups=lookups,
        dictionaries=dictionaries,
        levels=levels,
        criterion=criterion,
        out=str(args.out),
        suppression_limit=args.suppression_limit,
        direct=direct,
        sensitive=sensitive,
        seed=args.seed,
    )
    if getattr(args, "manifest", None):
        Path(args.manifest).write_text(
            done.written.manifest.canonical_json() + "\n", encoding="utf-8"
        )
    return done


def add_manifest_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifest",
        metavar="PATH",
        help="write the release's manifest (files, rows, SHA-256) to this local JSON file",
    )


def manifest_report(done: RowsRelease) -> dict[str, Any]:
    manifest = done.written.manifest
    return {
        "engine": done.written.engine,
        "manifest_digest": manifest.digest,
        "files": len(manifest.files),
    }


# --------------------------------------------------------------------------- verify


def register(subparsers: Any) -> None:
    """`verify`: hash a release's files again and compare them with its manifest."""
    parser = subparsers.add_parser(
        "verify", help="check a release's files against its manifest (SHA-256 of each file)"
    )
    parser.add_argument("manifest", help="the manifest JSON written by apply --manifest")
    parser.add_argument("--digest", help="the approved digest the manifest must have")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_engine_arguments(parser)
    parser.set_defaults(handler=verify_command)


def read_manifest(path: str) -> ReleaseManifest:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return ReleaseManifest.from_dict(data)
    except FileNotFoundError:
        raise EngineInputError(f"manifest not found: {path}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise EngineInputError(f"not a release manifest: {path} ({exc})") from None


def verify_report(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    manifest = read_manifest(args.manifest)
    if args.digest and args.digest != manifest.digest:
        check_ok, message = False, "the manifest is not the approved one (its digest differs)"
        checked: dict[str, Any] = {"changed": [], "missing": [], "added": []}
    else:
        check = row_engine(args).verify_release(manifest)
        check_ok, message = check.ok, check.message()
        checked = {
            "changed": list(check.changed),
            "missing": list(check.missing),
            "added": list(check.added),
        }
    return {
        "location": manifest.location,
        "digest": manifest.digest,
        "ok": check_ok,
        "message": message,
        **checked,
        "seconds": time.perf_counter() - started,
    }


def verify_command(args: argparse.Namespace) -> int:
    report = verify_report(args)
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(f"{report['location']}: {report['message']} (digest {report['digest']})")
    return 0 if report["ok"] else 1
