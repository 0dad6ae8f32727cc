"""The product's steps after the data set (bench/bench_scale.py), each what the product runs,
on the file the previous step wrote; each runs in a worker process of its own
(:mod:`.harness`) and returns its figures:

- upload (:func:`step_upload`): apps.datasets.ingest.convert_to_parquet on the CSV
  (encoding and delimiter detected, every record checked line by line, converted to
  Parquet by streaming); the steps below read the Parquet it wrote;
- profile (:func:`step_profile`): apps.datasets.profiling.profile_parquet;
- measure (:func:`step_measure`): apps.engine.frame.encode (a streaming group-by to the
  distinct tuples) and apps.engine.risk.risk_profile; the distinct tuples and the
  dictionaries are saved for the next steps;
- search (:func:`step_search`): apps.engine.search.optimal_search on the saved distinct
  tuples (k, suppression limit and metric of :mod:`.data`, ARX's adult hierarchies),
  loading the compiled kernels included; the levels found are saved;
- apply (:func:`step_apply`): apps.engine.apply.apply_solution for those levels (record
  number replaced by its keyed pseudonym, HMAC-SHA-256; quasi-identifiers generalized,
  small classes suppressed, rows shuffled out of core), followed by its re-measure of the
  written file.

The product's modules are imported inside each step, once the worker has set up its
environment.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.scale.data import ARX, METRIC, QUASI, SUPPRESSION, K


def step_upload(data: Path, work: Path) -> dict[str, Any]:
    """What the upload job does with the CSV: detect encoding and delimiter, check every
    record line by line, convert to Parquet by streaming (apps.datasets.ingest)."""
    from apps.datasets.ingest import convert_to_parquet

    result = convert_to_parquet(data.with_suffix(".csv"), "scale.csv", work / "uploaded.parquet")
    return {
        "rows": result.rows,
        "columns": len(result.columns),
        "encoding": result.encoding,
        "delimiter": result.delimiter,
        "file_mib": (work / "uploaded.parquet").stat().st_size / 1024**2,
    }


def step_profile(data: Path) -> dict[str, Any]:
    from apps.datasets.profiling import profile_parquet

    profile = profile_parquet(data)
    return {
        "rows": profile.rows,
        "columns": len(profile.columns),
        "types": {c.name: c.inferred_type for c in profile.columns},
        "distinct": {c.name: c.distinct for c in profile.columns},
    }


def step_measure(data: Path, work: Path) -> dict[str, Any]:
    from apps.engine.frame import encode
    from apps.engine.reading import read_table
    from apps.engine.risk import encoded_class_sizes, risk_profile

    encoded = encode(read_table(data), QUASI)
    profile = risk_profile(encoded_class_sizes(encoded))
    encoded.tuples.write_parquet(work / "tuples.parquet")
    (work / "dictionaries.json").write_text(
        json.dumps(
            {"rows": encoded.rows, "dictionaries": [d.to_list() for d in encoded.dictionaries]}
        )
    )
    return {
        "rows": profile.rows,
        "distinct_tuples": encoded.distinct_tuples,
        "uniques": profile.uniques,
        "max_risk": profile.max_risk,
        "average_risk": round(profile.average_risk, 6),
    }


def _problem(work: Path) -> tuple[Any, list[Any], list[Any]]:
    import polars as pl

    from apps.engine.encoded import EncodedData
    from apps.engine.hierarchies import read_arx_csv
    from apps.engine.search import problem_from_encoded

    saved = json.loads((work / "dictionaries.json").read_text())
    dictionaries = [
        pl.Series(q, values, dtype=pl.String)
        for q, values in zip(QUASI, saved["dictionaries"], strict=True)
    ]
    encoded = EncodedData(
        quasi=tuple(QUASI),
        dictionaries=tuple(dictionaries),
        tuples=pl.read_parquet(work / "tuples.parquet"),
        rows=int(saved["rows"]),
    )
    hierarchies = {q: read_arx_csv(ARX / f"adult_hierarchy_{q}.csv", q) for q in QUASI}
    lookups = [hierarchies[q].lookup(d) for q, d in zip(QUASI, dictionaries, strict=True)]
    return problem_from_encoded(encoded, lookups), lookups, dictionaries


def step_search(work: Path) -> dict[str, Any]:
    from apps.engine.criteria import KAnonymity
    from apps.engine.search import optimal_search
    from apps.engine.search.preload import load_compiled_code

    started = time.perf_counter()
    load_compiled_code()
    loaded = time.perf_counter() - started
    problem, _, _ = _problem(work)
    result = optimal_search(problem, KAnonymity(K), metric=METRIC, suppression_limit=SUPPRESSION)
    assert result.solution is not None, "no solution"
    levels = {q: int(level) for q, level in zip(QUASI, result.solution.levels, strict=True)}
    (work / "levels.json").write_text(json.dumps(levels))
    return {
        "tuples": len(problem.counts),
        "nodes_evaluated": result.nodes_evaluated,
        "levels": list(result.solution.levels),
        "suppressed_rows": result.solution.suppressed_rows,
        "search_seconds": round(result.seconds, 3),
        "load_seconds": round(loaded, 2),
    }


def step_apply(data: Path, work: Path) -> dict[str, Any]:
    from apps.engine.apply import apply_solution
    from apps.engine.criteria import KAnonymity
    from apps.engine.reading import read_table

    problem, lookups, dictionaries = _problem(work)
    levels = json.loads((work / "levels.json").read_text())
    out = work / "release.parquet"
    started = time.perf_counter()
    result = apply_solution(
        read_table(data),
        problem=problem,
        lookups=lookups,
        dictionaries=dictionaries,
        levels=levels,
        criterion=KAnonymity(K),
        out=out,
        suppression_limit=SUPPRESSION,
        direct={"record_id": "hmac"},
    )
    m = result.measure
    figures = {
        "rows_in": m.rows_in,
        "rows_out": m.rows_out,
        "suppressed_rows": m.suppressed_rows,
        "classes": m.risk.equivalence_classes,
        "smallest_class": m.risk.smallest_class,
        "passes": m.passes,
        "release_mib": out.stat().st_size / 1024**2,
        "apply_seconds": round(time.perf_counter() - started, 1),
    }
    out.unlink()
    return figures
