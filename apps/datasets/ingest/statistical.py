"""SAS, SPSS and Stata files, read by pyreadstat in chunks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from apps.datasets.ingest.common import (
    LABELS,
    IngestError,
    IngestLimits,
    IngestResult,
    blank_strings_to_null,
    check_columns,
    check_names,
    count_rows,
    drop_empty_rows,
    dropped_rows_warning,
    reading_failure,
    whole_number_columns,
)

_CHUNK_ROWS = 200_000


def _stat_reader(fmt: str) -> Callable[..., Any]:
    import pyreadstat

    readers: dict[str, Callable[..., Any]] = {
        "sas7bdat": pyreadstat.read_sas7bdat,
        "xpt": pyreadstat.read_xport,
        "sav": pyreadstat.read_sav,
        "zsav": pyreadstat.read_sav,
        "por": pyreadstat.read_por,
        "dta": pyreadstat.read_dta,
    }
    return readers[fmt]


def _code_text(code: Any) -> str:
    if isinstance(code, float) and code.is_integer():
        return str(int(code))
    return str(code)


def _value_label_warning(labels: dict[str, dict[Any, str]]) -> list[str]:
    if not labels:
        return []
    parts = []
    for name, mapping in list(labels.items())[:10]:
        shown = ", ".join(
            f"{_code_text(code)} = {text}" for code, text in list(mapping.items())[:6]
        )
        more = ", …" if len(mapping) > 6 else ""
        parts.append(f"{name} ({shown}{more})")
    extra = f" and {len(labels) - 10} more" if len(labels) > 10 else ""
    return [
        "Value labels were found; the codes are stored, not the labels: "
        + "; ".join(parts)
        + extra
        + "."
    ]


def convert_statistical(
    src: Path,
    fmt: str,
    temporary: Path,
    scratch: Path,
    encoding: str | None,
    limits: IngestLimits,
) -> IngestResult:
    import pyreadstat

    reader = _stat_reader(fmt)
    what = LABELS[fmt]
    options: dict[str, Any] = {}
    if encoding and fmt != "por":
        options["encoding"] = encoding
    try:
        _, meta = reader(src, metadataonly=True, **options)
    except Exception as exc:  # noqa: BLE001 - pyreadstat raises ReadstatError and others
        raise reading_failure(exc, what) from None
    check_columns(len(meta.column_names), limits)
    names = check_names(list(meta.column_names))
    parts: list[Path] = []
    whole: set[str] | None = None
    try:
        chunks = pyreadstat.read_file_in_chunks(
            reader, src, chunksize=_CHUNK_ROWS, output_format="polars", **options
        )
        for index, (chunk, _) in enumerate(chunks):
            frame: pl.DataFrame = chunk
            frame.columns = names
            part_whole = whole_number_columns(frame.drop_nulls()) | {
                name
                for name, dtype in frame.schema.items()
                if dtype in (pl.Float32, pl.Float64)
                and frame.get_column(name).null_count() == frame.height
            }
            whole = part_whole if whole is None else whole & part_whole
            part = scratch / f"part-{index:06d}.parquet"
            frame.write_parquet(part)
            parts.append(part)
    except IngestError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise reading_failure(exc, what) from None
    if not parts:
        raise IngestError(f"The file ({what}) has variables but no rows.", code="no_data_rows")
    frame_lazy = pl.concat([pl.scan_parquet(part) for part in parts], how="vertical_relaxed")
    schema = frame_lazy.collect_schema()
    whole = {name for name in (whole or set()) if schema[name] in (pl.Float32, pl.Float64)}
    frame_lazy = frame_lazy.with_columns(pl.col(name).cast(pl.Int64) for name in whole)
    frame_lazy = blank_strings_to_null(frame_lazy, schema)
    total = sum(pl.scan_parquet(part).select(pl.len()).collect().item() for part in parts)
    drop_empty_rows(frame_lazy).sink_parquet(temporary)
    rows = count_rows(temporary)
    if rows == 0:
        raise IngestError(f"The file ({what}) has variables but no rows.", code="no_data_rows")
    labels = dict(getattr(meta, "variable_value_labels", {}) or {})
    warnings = _value_label_warning(labels) + dropped_rows_warning(int(total) - rows)
    file_encoding = getattr(meta, "file_encoding", None)
    return IngestResult(
        format=fmt,
        rows=rows,
        columns=tuple(names),
        delimiter=None,
        encoding=encoding or (str(file_encoding) if file_encoding else None),
        sheet=None,
        warnings=tuple(warnings),
    )
