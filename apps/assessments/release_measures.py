"""Measured on the release itself, after Step 7: attribute disclosure (distinct l-diversity
of each sensitive variable over the released classes, homogeneous classes flagged), small
cells of the released quasi-identifiers, and each variable's distribution before and after
(Step 8). The original data's figures are Step 4's; these are what the recipient gets."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import polars as pl

from apps.engine.attribute import diversity_per_class, l_diversity
from apps.engine.frame import encode
from apps.engine.smallcells import small_cells
from apps.engine.utility import release_distributions

MAX_FLAGGED_CLASSES = 20


def homogeneous_classes(
    released: pl.DataFrame | pl.LazyFrame, quasi: list[str], sensitive: str
) -> list[dict[str, Any]]:
    """Released classes of two records or more whose sensitive value is the same for all:
    the quasi-identifier values of each (never the sensitive value), largest first (equal
    sizes in the order of their values, so that the same release lists the same classes)."""
    if not quasi:
        return []
    grouped = (
        diversity_per_class(released.lazy(), quasi, sensitive)
        .filter((pl.col("__l") == 1) & (pl.col("__size") > 1))
        .sort(["__size", *quasi], descending=[True, *(False for _ in quasi)], nulls_last=True)
        .head(MAX_FLAGGED_CLASSES)
        .collect(engine="streaming")
    )
    return [
        {"values": {q: row[q] for q in quasi}, "records": int(row["__size"])}
        for row in grouped.iter_rows(named=True)
    ]


def release_measures(
    original: pl.LazyFrame,
    released: pl.DataFrame | pl.LazyFrame,
    *,
    quasi: list[str],
    sensitive: list[str],
    levels: dict[str, int],
    tops: dict[str, int],
    masked: list[str],
) -> dict[str, Any]:
    """The release's measures (module docstring). ``released`` is best the written file
    scanned (``pl.scan_parquet``): every figure is a streaming group-by or aggregate, so
    memory follows the classes and distinct values, not the rows."""
    release = released.lazy()
    rows = int(release.select(pl.len()).collect(engine="streaming").item())
    names = release.collect_schema().names()
    present = [s for s in sensitive if s in names]
    diversity = l_diversity(release, quasi, present) if present and rows else ()
    disclosure = []
    for figures in diversity:
        disclosure.append(
            {
                **figures.to_dict(),
                "flagged_classes": homogeneous_classes(release, quasi, figures.column),
            }
        )
    cells = small_cells(encode(release, quasi)) if quasi and rows else None
    return {
        "attribute_disclosure_after": disclosure,
        "small_cells_after": {
            "min_count": cells.min_count,
            "min_share": cells.min_share,
            "univariate": [asdict(c) for c in cells.univariate[:200]],
            "bivariate": [asdict(c) for c in cells.bivariate[:200]],
            "univariate_total": len(cells.univariate),
            "bivariate_total": len(cells.bivariate),
        }
        if cells is not None
        else None,
        "variable_distributions": [
            d.to_dict()
            for d in release_distributions(
                original, release, quasi=quasi, levels=levels, tops=tops, masked=masked
            )
        ],
    }
