"""Measured on the release itself, after Step 7: attribute disclosure (distinct l-diversity
of each sensitive variable over the released classes, homogeneous classes flagged), small
cells of the released quasi-identifiers, and each variable's distribution before and after
(Step 8). The original data's figures are Step 4's; these are what the recipient gets."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import polars as pl

from apps.engine.attribute import l_diversity
from apps.engine.frame import encode
from apps.engine.smallcells import small_cells
from apps.engine.utility import release_distributions

MAX_FLAGGED_CLASSES = 20


def homogeneous_classes(
    released: pl.DataFrame, quasi: list[str], sensitive: str
) -> list[dict[str, Any]]:
    """Released classes of two records or more whose sensitive value is the same for all:
    the quasi-identifier values of each (never the sensitive value), largest first."""
    if not quasi:
        return []
    grouped = (
        released.group_by(quasi)
        .agg(pl.len().alias("records"), pl.col(sensitive).n_unique().alias("l"))
        .filter((pl.col("l") == 1) & (pl.col("records") > 1))
        .sort("records", descending=True)
        .head(MAX_FLAGGED_CLASSES)
    )
    return [
        {"values": {q: row[q] for q in quasi}, "records": int(row["records"])}
        for row in grouped.iter_rows(named=True)
    ]


def release_measures(
    original: pl.LazyFrame,
    released: pl.DataFrame,
    *,
    quasi: list[str],
    sensitive: list[str],
    levels: dict[str, int],
    tops: dict[str, int],
    masked: list[str],
) -> dict[str, Any]:
    present = [s for s in sensitive if s in released.columns]
    diversity = l_diversity(released, quasi, present) if present and released.height else ()
    disclosure = []
    for figures in diversity:
        disclosure.append(
            {
                **figures.to_dict(),
                "flagged_classes": homogeneous_classes(released, quasi, figures.column),
            }
        )
    cells = small_cells(encode(released, quasi)) if quasi and released.height else None
    columns = original.collect_schema().names()
    frame = original.select(columns).collect(engine="streaming")
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
                frame, released, quasi=quasi, levels=levels, tops=tops, masked=masked
            )
        ],
    }
