"""Privacy models on a sensitive column: hand-computed values, parsing, and every node of
random problems judged by the compiled kernel exactly as by the plain formulas."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import KAnonymity
from apps.engine.errors import EngineInputError, HierarchyError
from apps.engine.frame import encode
from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.lattice import Lattice
from apps.engine.search import SearchProblem
from apps.engine.search.sensitive import SensitiveTable, problem_with_sensitive
from apps.engine.sensitive import SensitiveModel, parse_model
from apps.engine.sensitive import formulas as f
from apps.engine.sensitive.column import numeric_order

# A class with values a, a, a, b in an input with a x4, b x4, c x2 (codes 0, 1, 2).
CLASS = {0: 3, 1: 1}
TOTALS = [4, 4, 2]
# a, b -> "ab"; c -> "c"; both -> "*"
SENSITIVE_MAPS = [[0, 1, 2], [0, 0, 1], [0, 0, 0]]


def test_distinct_l() -> None:
    assert f.distinct_l(CLASS) == 2
    assert f.distinct_l_passes(CLASS, 2)
    assert not f.distinct_l_passes(CLASS, 3)


def test_entropy_l() -> None:
    # H = ln 4 - (3 ln 3)/4 = 0.5623 nats: >= ln 1.5 = 0.405, < ln 2 = 0.693
    assert f.shannon_entropy(CLASS) == pytest.approx(math.log(4) - 3 * math.log(3) / 4)
    assert f.entropy_l_passes(CLASS, 1.5)
    assert not f.entropy_l_passes(CLASS, 2)
    assert f.entropy_l_passes({0: 2, 1: 2}, 2)  # H = ln 2 exactly: passes (not <)
    assert not f.entropy_l_passes({0: 5}, 1.5)  # fewer than ceil(1.5) = 2 values


def test_recursive_cl() -> None:
    # r1 = 3, r2 = 1: (3, 2) needs 3 < 3 x 1 (no); (4, 2): 3 < 4 (yes)
    assert not f.recursive_cl_passes(CLASS, 3, 2)
    assert f.recursive_cl_passes(CLASS, 4, 2)
    # (c, l) = (2, 3) on 5, 2, 2, 1: 5 < 2 x (2 + 1) = 6
    assert f.recursive_cl_passes({0: 5, 1: 2, 2: 2, 3: 1}, 2, 3)
    assert not f.recursive_cl_passes({0: 5, 1: 2}, 10, 3)  # fewer than 3 values


def test_equal_distance() -> None:
    # p = (0.75, 0.25, 0), q = (0.4, 0.4, 0.2): (0.35 + 0.15 + 0.2) / 2
    assert f.equal_distance(CLASS, f.overall_shares(TOTALS)) == pytest.approx(0.35)


def test_ordered_distance() -> None:
    # p - q in order a, b, c: 0.35, -0.15, -0.2; running 0.35, 0.2, 0; / (3 - 1)
    assert f.ordered_distance(CLASS, TOTALS, [0, 1, 2]) == pytest.approx(0.275)
    # order c, a, b: -0.2, 0.35, -0.15 -> running -0.2, 0.15, 0 -> 0.35 / 2
    assert f.ordered_distance(CLASS, TOTALS, [2, 0, 1]) == pytest.approx(0.175)


def test_hierarchical_distance() -> None:
    # extras q - p: a -0.35, b +0.15, c +0.2. Level 1 (cost 1/2): "ab" moves
    # min(0.15, 0.35); "c" nothing. Root (cost 1): min(0.2, 0.2). 0.075 + 0.2
    assert f.hierarchical_distance(CLASS, TOTALS, SENSITIVE_MAPS) == pytest.approx(0.275)
    assert f.hierarchical_distance({0: 4, 1: 4, 2: 2}, TOTALS, SENSITIVE_MAPS) == 0.0


@pytest.mark.parametrize(
    ("spec", "model"),
    [
        ("distinct-l=2", SensitiveModel("s", "distinct-l", l=2)),
        ("entropy-l=1.5", SensitiveModel("s", "entropy-l", l=1.5)),
        ("recursive-cl=3,2", SensitiveModel("s", "recursive-cl", l=2, c=3)),
        ("equal-t=0.2", SensitiveModel("s", "equal-t", t=0.2)),
        ("hierarchical-t=0.2", SensitiveModel("s", "hierarchical-t", t=0.2)),
        ("ordered-t=0.15", SensitiveModel("s", "ordered-t", t=0.15)),
    ],
)
def test_parse_model(spec: str, model: SensitiveModel) -> None:
    assert parse_model("s", spec) == model
    assert parse_model("s", spec).spec() == spec


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("k=5", "not understood"),
        ("distinct-l", "not understood"),
        ("distinct-l=2.5", "whole number"),
        ("entropy-l=0.5", "l must be >= 1"),
        ("recursive-cl=3", "needs C,L"),
        ("recursive-cl=0,2", "c must be > 0"),
        ("equal-t=1.5", "t must be in [0, 1]"),
        ("ordered-t=abc", "must be a number"),
    ],
)
def test_parse_model_errors(spec: str, message: str) -> None:
    with pytest.raises(EngineInputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_model("s", spec)


def test_models_declare_arx_monotonicity_and_least_class() -> None:
    assert parse_model("s", "distinct-l=3").monotone_with_suppression
    for spec in ("entropy-l=2", "recursive-cl=3,2", "equal-t=0.2", "ordered-t=0.2"):
        assert not parse_model("s", spec).monotone_with_suppression
    assert parse_model("s", "entropy-l=2.5").min_class_size == 3
    assert parse_model("s", "equal-t=0.2").min_class_size == 1


def test_numeric_order() -> None:
    order = numeric_order(["10", "9", "-1", "2.5"])
    assert order is not None
    assert order.tolist() == [2, 3, 1, 0]
    assert numeric_order(["1", "x"]) is None
    assert numeric_order(["1", None]) is None


# --------------------------------------------------------------------------- problems


def build(
    rows: Sequence[Sequence[str | None]],
    hierarchies: Mapping[str, Sequence[Sequence[str]]],
    specs: Sequence[str],
    sensitive_hierarchy: Sequence[Sequence[str]] | None = None,
) -> tuple[SearchProblem, SensitiveTable]:
    """Rows of (quasi-identifiers..., sensitive "s"), encoded as the command line does."""
    quasi = list(hierarchies)
    names = [*quasi, "s"]
    frame = pl.DataFrame(
        {c: [r[j] for r in rows] for j, c in enumerate(names)},
        schema=dict.fromkeys(names, pl.String),
    )
    enc = encode(frame, names)
    lookups = [
        hierarchy_from_rows(q, hierarchies[q]).lookup(d)
        for q, d in zip(quasi, enc.dictionaries[: len(quasi)], strict=True)
    ]
    hs = {"s": hierarchy_from_rows("s", sensitive_hierarchy)} if sensitive_hierarchy else None
    models = [parse_model("s", spec) for spec in specs]
    return problem_with_sensitive(
        enc, lookups, ["s"], models, dictionaries=enc.dictionaries, hierarchies=hs
    )


def oracle_verdicts(
    rows: Sequence[Sequence[str | None]],
    hierarchies: Mapping[str, Sequence[Sequence[str]]],
    levels: Sequence[int],
    specs: Sequence[str],
    k: int,
    sensitive_hierarchy: Sequence[Sequence[str]] | None = None,
) -> dict[tuple[str | None, ...], bool | None]:
    """Per class (generalized labels): is it released? Plain Python, formulas.py only.
    None when a t-closeness distance is within float noise of its threshold: the
    kernel adds in another order (ARX in a hash order), so such ties may go either way."""
    hs = [hierarchy_from_rows(q, h) for q, h in hierarchies.items()]
    values = sorted({r[-1] for r in rows}, key=lambda v: (v is None, v or ""))
    code = {v: i for i, v in enumerate(values)}
    totals = [sum(1 for r in rows if r[-1] == v) for v in values]
    classes: dict[tuple[str | None, ...], Counter[int]] = {}
    for r in rows:
        key = tuple(h.generalize(v, lv) for h, v, lv in zip(hs, r[:-1], levels, strict=True))
        classes.setdefault(key, Counter())[code[r[-1]]] += 1
    maps: list[list[int]] = []
    if sensitive_hierarchy:
        sh = hierarchy_from_rows("s", sensitive_hierarchy)
        for lv in range(sh.height + 1):
            labels: dict[str | None, int] = {}
            maps.append([labels.setdefault(sh.generalize(v, lv), len(labels)) for v in values])
    numbers = [float(v) if v is not None else math.nan for v in values]
    order = sorted(range(len(values)), key=lambda i: numbers[i])
    out: dict[tuple[str | None, ...], bool | None] = {}
    for key, counts in classes.items():
        ok: bool | None = sum(counts.values()) >= k
        for spec in specs:
            m = parse_model("s", spec)
            if not ok:
                break
            distance = math.nan
            if m.kind == "distinct-l":
                ok = f.distinct_l_passes(counts, m.l)
            elif m.kind == "entropy-l":
                ok = f.entropy_l_passes(counts, m.l)
            elif m.kind == "recursive-cl":
                ok = f.recursive_cl_passes(counts, m.c, m.l)
            elif m.kind == "equal-t":
                distance = f.equal_distance(counts, f.overall_shares(totals))
            elif m.kind == "hierarchical-t":
                distance = f.hierarchical_distance(counts, totals, maps)
            else:
                distance = f.ordered_distance(counts, totals, order)
            if not math.isnan(distance):
                ok = None if abs(distance - m.t) < 1e-9 else distance <= m.t
        out[key] = ok
    return out


QI_HIERARCHIES = {
    "q0": [["x1", "x12", "*"], ["x2", "x12", "*"], ["x3", "x3", "*"]],
    "q1": [["y1", "*"], ["y2", "*"]],
}
SENSITIVE_VALUES = ["1", "2", "3", "10", "25"]  # numeric order differs from text order
SENSITIVE_TREE = [
    ["1", "low", "*"],
    ["2", "low", "*"],
    ["3", "low", "*"],
    ["10", "high", "*"],
    ["25", "high", "*"],
]
SPECS = st.sampled_from(
    [
        "distinct-l=2",
        "distinct-l=3",
        "entropy-l=1.5",
        "entropy-l=2",
        "recursive-cl=2,2",
        "recursive-cl=3,3",
        "equal-t=0.21",
        "equal-t=0.35",
        "hierarchical-t=0.17",
        "hierarchical-t=0.3",
        "ordered-t=0.13",
        "ordered-t=0.25",
    ]
)


@st.composite
def sensitive_rows(draw: Any) -> list[tuple[str | None, ...]]:
    n = draw(st.integers(1, 60))
    qi = [[r[0] for r in h] for h in QI_HIERARCHIES.values()]
    return [
        (
            draw(st.sampled_from(qi[0])),
            draw(st.sampled_from(qi[1])),
            draw(st.sampled_from(SENSITIVE_VALUES)),
        )
        for _ in range(n)
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=sensitive_rows(),
    specs=st.lists(SPECS, min_size=1, max_size=2, unique=True),
    k=st.integers(1, 5),
)
def test_kernel_judges_every_node_like_the_formulas(
    rows: list[tuple[str | None, ...]], specs: list[str], k: int
) -> None:
    problem, table = build(rows, QI_HIERARCHIES, specs, SENSITIVE_TREE)
    for levels in Lattice(problem.heights).levels.tolist():
        got = judged(problem, table, levels, k)
        expected = oracle_verdicts(rows, QI_HIERARCHIES, levels, specs, k, SENSITIVE_TREE)
        assert got.keys() == expected.keys()
        for key, released in expected.items():
            if released is not None:
                assert got[key] == released, (levels, specs, k, key)


def judged(
    problem: SearchProblem, table: SensitiveTable, levels: Sequence[int], k: int
) -> dict[tuple[str | None, ...], bool]:
    """The kernel's verdict per class of node ``levels``, keyed by generalized labels."""
    verdict, codes = table.judge_node(levels, k)
    out = {}
    for g in range(len(verdict.sizes)):
        key = []
        for j, lk in enumerate(problem.lookups):
            assert lk.labels is not None
            key.append(lk.labels[levels[j]][int(codes[j, g])])
        out[tuple(key)] = int(verdict.status[g]) == 0
    return out


def test_ordered_distance_refuses_text() -> None:
    rows = [("x1", "y1", "flu"), ("x2", "y2", "cold")]
    with pytest.raises(EngineInputError, match="ordered-distance t-closeness needs numbers in 's'"):
        build(rows, QI_HIERARCHIES, ["ordered-t=0.2"])


def test_hierarchical_distance_needs_a_tree_hierarchy() -> None:
    rows = [("x1", "y1", "1"), ("x2", "y2", "2")]
    with pytest.raises(EngineInputError, match="needs a hierarchy"):
        build(rows, QI_HIERARCHIES, ["hierarchical-t=0.2"])
    not_a_tree = [["1", "a", "*"], ["2", "b", "*"], ["3", "a", "+"]]
    with pytest.raises(HierarchyError, match="not a function"):  # validated on reading
        build(rows, QI_HIERARCHIES, ["hierarchical-t=0.2"], not_a_tree)


def test_release_size_is_the_largest_least_class() -> None:
    _, table = build([("x1", "y1", "1")], QI_HIERARCHIES, ["entropy-l=2.5", "equal-t=0.3"])
    assert table.release_size(KAnonymity(2)) == 3  # ceil(2.5): ARX's minimal class size
    assert table.release_size(KAnonymity(5)) == 5
    assert not table.monotone_with_suppression
