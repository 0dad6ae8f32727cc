"""l-diversity and t-closeness on ARX's benchmark data: ARX 3.9.2's own results.

Every expected row below was produced by ARX 3.9.2 (``ARXAnonymizer.anonymize`` with
``KAnonymity(k)``, the sensitive model, ``setSuppressionLimit`` and
``Metric.createLossMetric()``; the other columns insensitive; a numeric sensitive column
typed ``DECIMAL`` for ordered distance), run from a build of ARX's source outside this
repository: the global optimum's levels, its suppressed rows (``DataHandle.isOutlier``)
and its score. The first three are the references of issue #17.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from apps.engine.criteria import KAnonymity
from apps.engine.encoded import EncodedData
from apps.engine.frame import encode_file
from apps.engine.hierarchies import read_arx_csv
from apps.engine.search import optimal_search
from apps.engine.search.sensitive import problem_with_sensitive
from apps.engine.sensitive import parse_model
from tests.engine.benchmark_data import require
from tests.engine.conftest import ADULT, ARX_DIR

QI7 = ("age", "education", "marital-status", "native-country", "race", "sex", "workclass")
QI6 = QI7[1:]
OCC_TREE = "adult_hierarchy_occupation.csv"

# (quasi, k, limit, sensitive, spec, sensitive hierarchy) -> (levels, suppressed, loss)
ARX_RESULTS = [
    (
        QI7,
        5,
        0.05,
        "occupation",
        "distinct-l=2",
        None,
        (3, 1, 0, 1, 0, 0, 1),
        1481,
        0.17149116900811867,
    ),
    (
        QI7,
        5,
        0.05,
        "occupation",
        "recursive-cl=3,2",
        None,
        (3, 2, 0, 1, 0, 0, 1),
        1056,
        0.18092756488896145,
    ),
    (
        QI7,
        5,
        0.05,
        "occupation",
        "hierarchical-t=0.2",
        OCC_TREE,
        (4, 3, 0, 1, 0, 1, 2),
        1384,
        0.5639850164995923,
    ),
    (
        QI7,
        5,
        0.05,
        "occupation",
        "entropy-l=2",
        None,
        (3, 2, 0, 1, 0, 0, 1),
        1071,
        0.1813563904247859,
    ),
    (
        QI7,
        5,
        0.05,
        "occupation",
        "equal-t=0.2",
        None,
        (4, 3, 1, 1, 1, 1, 2),
        235,
        0.7900105523636556,
    ),
    (
        QI7,
        5,
        0.05,
        "occupation",
        "distinct-l=3",
        None,
        (3, 2, 0, 1, 0, 0, 1),
        1071,
        0.1813563904247859,
    ),
    (QI7, 5, 0.0, "occupation", "distinct-l=2", None, (4, 3, 1, 2, 0, 0, 2), 0, 0.5643898584690297),
    (
        QI7,
        5,
        0.0,
        "occupation",
        "hierarchical-t=0.3",
        OCC_TREE,
        (4, 3, 1, 2, 0, 0, 2),
        0,
        0.5643898584690297,
    ),
    (QI6, 5, 0.05, "age", "ordered-t=0.1", None, (2, 1, 1, 0, 0, 1), 1083, 0.24397016417628192),
    (QI6, 5, 0.05, "age", "ordered-t=0.05", None, (3, 2, 1, 0, 0, 1), 707, 0.3844259125835572),
    (
        QI7,
        2,
        0.1,
        "salary-class",
        "recursive-cl=4,2",
        None,
        (4, 3, 2, 1, 0, 1, 0),
        2932,
        0.5918505120583226,
    ),
    (
        QI7,
        11,
        0.02,
        "occupation",
        "entropy-l=3.5",
        None,
        (3, 3, 1, 1, 0, 0, 1),
        595,
        0.2939800645550712,
    ),
]


@pytest.fixture(scope="module")
def encodings() -> dict[tuple[tuple[str, ...], str], EncodedData]:
    require(ADULT)
    return {}


@pytest.mark.parametrize(
    ("quasi", "k", "limit", "sensitive", "spec", "tree", "levels", "suppressed", "loss"),
    ARX_RESULTS,
    ids=[f"{r[4]}-k{r[1]}-{r[2]}-{r[3]}" for r in ARX_RESULTS],
)
def test_adult_matches_arx(
    encodings: dict[tuple[tuple[str, ...], str], EncodedData],
    quasi: tuple[str, ...],
    k: int,
    limit: float,
    sensitive: str,
    spec: str,
    tree: str | None,
    levels: tuple[int, ...],
    suppressed: int,
    loss: float,
) -> None:
    key = (quasi, sensitive)
    if key not in encodings:
        encodings[key] = encode_file(ADULT, [*quasi, sensitive], sep=";")
    encoded = encodings[key]
    lookups = [
        read_arx_csv(Path(ARX_DIR) / f"adult_hierarchy_{q}.csv", q).lookup(d)
        for q, d in zip(quasi, encoded.dictionaries, strict=False)
    ]
    hierarchies = {sensitive: read_arx_csv(Path(ARX_DIR) / tree, sensitive)} if tree else None
    problem, table = problem_with_sensitive(
        encoded,
        lookups,
        [sensitive],
        [parse_model(sensitive, spec)],
        dictionaries=encoded.dictionaries,
        hierarchies=hierarchies,
    )
    result = optimal_search(
        problem, KAnonymity(k), metric="loss", suppression_limit=limit, sensitive=table
    )
    assert result.optimal
    assert result.solution is not None
    assert result.solution.levels == levels
    assert result.solution.suppressed_rows == suppressed
    assert result.solution.information_loss == pytest.approx(loss, rel=1e-12)
