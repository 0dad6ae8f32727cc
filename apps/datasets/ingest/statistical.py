"""SAS, SPSS and Stata files, read by pyreadstat in chunks.

The header states the variables and, except in SAS transport and SPSS portable files, the
rows: a file whose values would decode to more than the limit is refused before any is
read. What passes is read in chunks of a bounded number of values (fewer rows when there
are many variables: 200,000 rows of 2,000 variables would be 400 million values at once).
"""

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
    human_size,
    reading_failure,
    whole_number_columns,
)

_CHUNK_ROWS = 200_000
# Values read at once: pyreadstat holds a chunk as Python values before polars takes it.
_CHUNK_VALUES = 2 * 1024**2
# The fewest bytes a value takes once decoded: a number, or polars' text value.
_NUMBER_BYTES, _TEXT_BYTES = 8, 16


# Bytes read at once, by the widths the header declares (a text variable may be 32,767
# bytes wide, and a compressed file of such values repeated is small).
_CHUNK_BYTES = 256 * 1024**2


def chunk_rows(variables: int, row_bytes: int = 0) -> int:
    """Rows read at once from a file of `variables` variables whose declared widths add up
    to `row_bytes`."""
    return max(
        1,
        min(
            _CHUNK_ROWS,
            _CHUNK_VALUES // max(variables, 1),
            _CHUNK_BYTES // max(row_bytes, 1),
        ),
    )


def _row_bytes(meta: Any) -> int:
    """What one row takes at most, by the widths the header declares."""
    widths = dict(getattr(meta, "variable_storage_width", {}) or {})
    return sum(max(_NUMBER_BYTES, int(widths.get(name) or 0)) for name in meta.column_names)


def _check_declared(meta: Any, filename: str, what: str, limits: IngestLimits) -> None:
    """Refuse a file whose header states rows and variables that decode to more than the
    limit (a compressed SPSS or SAS file of repeated values can be tiny)."""
    rows = getattr(meta, "number_rows", None)
    bound = limits.max_decoded_bytes
    if bound is None or not rows:
        return
    types = dict(getattr(meta, "readstat_variable_types", {}) or {})
    widths = [
        _TEXT_BYTES if types.get(name) == "string" else _NUMBER_BYTES for name in meta.column_names
    ]
    decoded = int(rows) * sum(widths)
    if decoded > bound:
        raise IngestError(
            f"'{filename}' ({what}) states {int(rows):,} rows × {len(widths):,} variables, "
            f"which expand to at least {human_size(decoded)}; the limit is "
            f"{human_size(bound)}. Upload fewer rows or variables.",
            code="expands_too_much",
        )


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
    filename: str,
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
    _check_declared(meta, filename, what, limits)
    names = check_names(list(meta.column_names))
    parts: list[Path] = []
    whole: set[str] | None = None
    try:
        chunks = pyreadstat.read_file_in_chunks(
            reader,
            src,
            chunksize=chunk_rows(len(names), _row_bytes(meta)),
            output_format="polars",
            **options,
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
