"""The seam's types: where the rows are, what the release pass does, what it hands back.

Only two passes of a release read rows: the class histogram and the release itself
(``apps.engine.rows`` explains the seam). These frozen dataclasses are all a caller
passes to, or gets from, an engine; they hold no engine object, so a Celery job can
build them from the database and hand them to either engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Literal, Protocol

import polars as pl

from apps.engine.attribute import SensitiveDiversity
from apps.engine.encoded import EncodedData
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import GeneralizationLookup
from apps.engine.masking import MaskingSecrets, MaskMethod, MaskSpec
from apps.engine.rows.manifest import ManifestCheck, ReleaseManifest

SourceFormat = Literal["auto", "csv", "parquet", "delta", "table"]
SOURCE_PREFIXES: tuple[SourceFormat, ...] = ("table", "parquet", "csv", "delta")
#: Called with a share of the pass done (0..1) and a message in plain words; it may
#: raise (a cancelled job): the engine then interrupts its cluster work and re-raises.
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class TableSource:
    """Where a data set's rows are: a file or folder (``path``) or a catalog table
    (``table``, cluster engines only).

    For the polars engine a path is a file of this machine; for Spark, a path the
    cluster reads (``/data/x.parquet``, ``s3a://bucket/claims/``). ``sep`` and
    ``null_values`` apply to CSV files, as in `apps.engine.reading.read_table`.
    """

    path: str | None = None
    table: str | None = None
    format: SourceFormat = "auto"
    sep: str | None = None
    null_values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.path is None) == (self.table is None):
            raise EngineInputError("a data source is a path or a table, exactly one of them")
        if self.table is not None and not self.table.strip():
            raise EngineInputError("table: needs a table name (table:NAME)")
        if self.path is not None and not self.path.strip():
            raise EngineInputError("empty data path")

    @classmethod
    def parse(
        cls, text: str, *, sep: str | None = None, null_values: Sequence[str] = ()
    ) -> TableSource:
        """``table:NAME``, ``parquet:PATH``, ``csv:PATH``, ``delta:PATH`` or a plain path
        (its format from its suffix; a folder is Parquet)."""
        prefix, colon, rest = text.partition(":")
        if colon and prefix in SOURCE_PREFIXES and not rest.startswith("//"):
            if prefix == "table":
                return cls(table=rest.strip(), format="table")
            return cls(path=rest, format=prefix, sep=sep, null_values=tuple(null_values))
        return cls(path=text, sep=sep, null_values=tuple(null_values))

    def describe(self) -> str:
        return f"table:{self.table}" if self.table is not None else str(self.path)

    def resolved_format(self) -> SourceFormat:
        """The format to read: the given one, else from the path's suffix."""
        if self.table is not None:
            return "table"
        if self.format != "auto":
            return self.format
        name = str(self.path).rstrip("/").rsplit("/", 1)[-1].lower()
        suffix = name.rsplit(".", 1)[-1] if "." in name else ""
        if suffix in ("csv", "tsv", "txt", "tab"):
            return "csv"
        return "parquet"  # .parquet, .pq, and a folder of Parquet files (a Spark table)


@dataclass(frozen=True)
class ColumnCounts:
    """Counts of one column for the data set's profile: rows, missing values, distinct
    present values and the most frequent values (most first; ties by value, missing
    last) with their counts. Values are as stored (an integer stays an integer)."""

    column: str
    rows: int
    missing: int
    distinct: int
    top: tuple[tuple[object, int], ...]


@dataclass(frozen=True)
class ReleasePlan:
    """What the release pass does to every row, decided before it starts.

    ``lookups``/``dictionaries``/``levels``: the chosen recoding (the histogram's
    dictionaries, compiled hierarchies). ``release_size``: classes smaller than this
    are suppressed; ``suppressed_classes`` (generalized labels, one row per class) are
    suppressed too (classes failing a privacy model). ``direct``: masking of the direct
    identifiers; ``keys``: keys to reuse (hmac, encrypt), others are drawn for the
    release. ``techniques``: row-local techniques applied to the released rows (their
    parameter dataclasses from apps.engine.techniques). ``rows``: the input's rows (sizes
    the shuffle). ``seed``: fixes the shuffle (tests only).
    """

    lookups: tuple[GeneralizationLookup, ...]
    dictionaries: tuple[pl.Series, ...]
    levels: Mapping[str, int]
    release_size: int
    rows: int
    direct: Mapping[str, MaskSpec | MaskMethod] = field(default_factory=dict)
    keys: Mapping[str, bytes] = field(default_factory=dict)
    techniques: tuple[object, ...] = ()
    suppressed_classes: pl.DataFrame | None = None
    seed: int | None = None

    @property
    def quasi(self) -> tuple[str, ...]:
        return tuple(lk.column for lk in self.lookups)


@dataclass(frozen=True)
class WrittenRelease:
    """A release written by an engine: where, its manifest (files, rows, SHA-256 of
    each file, and the manifest's digest), and the secrets to keep apart from it."""

    location: str
    manifest: ReleaseManifest
    secrets: MaskingSecrets
    engine: str


class RowEngine(Protocol):
    """The two row passes (and their helpers) of one engine; ``apps.engine.rows``."""

    name: str

    def columns(self, source: TableSource) -> tuple[str, ...]:
        """The source's column names, in order."""
        ...

    def head(self, source: TableSource, rows: int) -> pl.DataFrame:
        """At most ``rows`` rows of the source, typed (a profile's sample of a table)."""
        ...

    def histogram(
        self, source: TableSource, columns: Sequence[str], *, progress: Progress | None = None
    ) -> EncodedData:
        """The class histogram over ``columns``: distinct tuples with their counts,
        encoded exactly as `apps.engine.frame.encode` encodes them."""
        ...

    def column_counts(
        self, source: TableSource, columns: Sequence[str], *, top: int = 10
    ) -> tuple[ColumnCounts, ...]:
        """Rows, missing, distinct and most frequent values per column (the profile)."""
        ...

    def l_diversity(
        self, source: TableSource, quasi: Sequence[str], sensitive: Sequence[str]
    ) -> tuple[SensitiveDiversity, ...]:
        """Distinct l-diversity of each sensitive column (apps.engine.attribute)."""
        ...

    def write_release(
        self,
        source: TableSource,
        plan: ReleasePlan,
        out: str,
        *,
        progress: Progress | None = None,
    ) -> WrittenRelease:
        """Mask, generalize, suppress, apply the row-local techniques, shuffle and write."""
        ...

    def verify_release(self, manifest: ReleaseManifest) -> ManifestCheck:
        """Hash the release's files again and compare them with ``manifest``."""
        ...

    def cancel(self) -> None:
        """Interrupt the engine's running work (from another thread); a no-op when idle."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> RowEngine: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None: ...
