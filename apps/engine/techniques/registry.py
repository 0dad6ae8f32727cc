"""One entry point for the wizard: apply (or preview) any row-level technique, measured.

Step 7 offers the techniques per variable with a preview and their effect before they
are applied; Step 8 compares with the generalization-only solution; the report lists
each technique with its parameters (never a seed or key) and its effect.  So every
technique is reached the same way: `apply_technique(data, params, quasi=…)` returns the
new data, the report-safe parameters, a plain-words explanation, the technique's ISO/IEC
20889 class (iso20889.py) and the measurement of measure.py (risk under the technique's
rule, utility per variable).  The parameter
dataclass says which technique it is.  Tables (aggregation.suppress_table) publish a
table rather than rows and are called directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import public_parameters
from apps.engine.techniques.date_shift import DateShiftParams, shift_dates
from apps.engine.techniques.iso20889 import Iso20889Class, iso_20889_class
from apps.engine.techniques.local_suppression import LocalSuppressionParams, local_suppression
from apps.engine.techniques.measure import TechniqueMeasure, measure_technique
from apps.engine.techniques.microaggregation import MicroaggregationParams, microaggregate
from apps.engine.techniques.noise import NoiseParams, add_noise
from apps.engine.techniques.pram import PramParams, pram
from apps.engine.techniques.rank_swap import RankSwapParams, rank_swap
from apps.engine.techniques.rounding import (
    RoundingParams,
    TopBottomParams,
    base_rounding,
    top_bottom_code,
)
from apps.engine.techniques.synthetic import SyntheticParams, synthesize

TechniqueParams = (
    LocalSuppressionParams
    | MicroaggregationParams
    | NoiseParams
    | RoundingParams
    | TopBottomParams
    | DateShiftParams
    | PramParams
    | RankSwapParams
    | SyntheticParams
)


@dataclass(frozen=True)
class Technique:
    key: str
    title: str
    explanation: str  # plain words for the page and the report
    source: str
    run: Callable[[pl.DataFrame, Any], Any]
    changed: Callable[[Any], tuple[str, ...]]  # the variables it changes


TECHNIQUES: dict[type, Technique] = {
    LocalSuppressionParams: Technique(
        "local_suppression",
        "Local suppression",
        "Single values of the few records that stand out are blanked, fewest first by the "
        "importance you gave each variable, until every record shares its quasi-identifiers "
        "with at least k − 1 others; a blank counts as a value of its own.",
        "Portage De-identification Guidance (2020); PDPC 2018 §3.1; Meyerson & Williams 2004",
        local_suppression,
        lambda p: tuple(p.quasi),
    ),
    MicroaggregationParams: Technique(
        "microaggregation",
        "Microaggregation",
        "Records are grouped with at least k − 1 similar ones and each number is replaced by "
        "its group's average, so no record's values are its own alone.",
        "PDPC 2018 §3.9; Domingo-Ferrer & Mateo-Sanz 2002 (MDAV)",
        microaggregate,
        lambda p: tuple(p.columns),
    ),
    NoiseParams: Technique(
        "noise",
        "Noise addition",
        "A small random amount is added to (or multiplied into) each number, so a released "
        "value no longer matches the true one exactly; the average and spread are kept.",
        "PDPC 2018 §3.6; Brand 2002; Kim & Winkler 2003",
        add_noise,
        lambda p: tuple(p.columns),
    ),
    RoundingParams: Technique(
        "rounding",
        "Rounding",
        "Numbers are rounded to the nearest multiple of a base (for example to the nearest "
        "1,000), hiding the exact value.",
        "PDPC 2018 §3.6 (base-x rounding)",
        base_rounding,
        lambda p: tuple(p.columns),
    ),
    TopBottomParams: Technique(
        "top_bottom_coding",
        "Top and bottom coding",
        "Values above a ceiling or below a floor are replaced by it (for example every age "
        "from 90 up becomes 90+), so rare extremes no longer stand out.",
        "Portage De-identification Guidance (2020), ages over 89; PDPC 2018 §3.5",
        top_bottom_code,
        lambda p: (p.column,),
    ),
    DateShiftParams: Technique(
        "date_shift",
        "Date shifting",
        "Every date of one person moves by the same secret number of days, so intervals "
        "between a person's dates are kept while calendar dates no longer match other "
        "sources.",
        "PDPC 2018 §3.6; keyed HMAC-SHA-256 (IPC 2016, step 7.1)",
        shift_dates,
        lambda p: tuple(p.columns),
    ),
    PramParams: Technique(
        "pram",
        "Post-randomisation (PRAM)",
        "Each record's category is changed at random with known probabilities that keep the "
        "overall frequencies, so no single value can be trusted.",
        "PDPC 2018 §3.6; Gouweleeuw et al. 1998",
        pram,
        lambda p: (p.column,),
    ),
    RankSwapParams: Technique(
        "rank_swap",
        "Rank swapping",
        "Each value is exchanged with that of another record of close rank, so every "
        "variable's distribution is kept but a record's values are no longer all its own.",
        "PDPC 2018 §3.4; Moore 1996",
        rank_swap,
        lambda p: tuple(p.columns),
    ),
    SyntheticParams: Technique(
        "synthetic",
        "Synthetic data",
        "A statistical model learnt from the data generates new records that follow the "
        "same patterns but belong to no real person; the release is checked against "
        "attacks using records the model never saw.",
        "PDPC 2018 §3.10; Chow & Liu 1968; attacks: Article 29 WP Opinion 05/2014",
        synthesize,
        lambda p: tuple(p.columns),
    ),
}


@dataclass(frozen=True)
class TechniqueOutcome:
    technique: str
    title: str
    explanation: str
    source: str
    parameters: dict[str, object]  # for the report: never a seed or a key
    data: pl.DataFrame
    changed: tuple[str, ...]
    measure: TechniqueMeasure | None  # None for synthetic data (its own checks in detail)
    detail: Any  # the technique's own result (counts, gaps, matrices, attack results)
    iso_class: Iso20889Class  # its ISO/IEC 20889 class (iso20889.py), for the report


def technique_of(params: object) -> Technique:
    found = TECHNIQUES.get(type(params))
    if found is None:
        raise EngineInputError(f"no technique takes {type(params).__name__}")
    return found


def apply_technique(
    data: pl.DataFrame, params: TechniqueParams, *, quasi: Sequence[str]
) -> TechniqueOutcome:
    """Run the technique, then measure its output against `data` (rows kept in order)."""
    technique = technique_of(params)
    result = technique.run(data, params)
    released: pl.DataFrame = result.data
    changed = technique.changed(params) or tuple(released.columns)
    measure = (
        None
        if technique.key == "synthetic"
        else measure_technique(technique.key, data, released, quasi, changed)
    )
    return TechniqueOutcome(
        technique=technique.key,
        title=technique.title,
        explanation=technique.explanation,
        source=technique.source,
        parameters=public_parameters(params),
        data=released,
        changed=changed,
        measure=measure,
        detail=result,
        iso_class=iso_20889_class(technique.key),
    )


def preview_technique(
    data: pl.DataFrame, params: TechniqueParams, *, quasi: Sequence[str], rows: int = 2_000
) -> TechniqueOutcome:
    """The same on a fixed sample of `rows` rows, for the page before applying.

    The sample is the first rows after a fixed shuffle, so two previews agree; local
    suppression and synthetic data depend on the whole file, so their preview shows the
    kind of change, not the final count.
    """
    sample = data if data.height <= rows else data.sample(rows, seed=0, shuffle=True)
    return apply_technique(sample, params, quasi=quasi)
