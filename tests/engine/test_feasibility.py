"""The check before a search, on the tiny hand-checked problem of test_loss.

Six rows: (a1,b1) x2, (a2,b1), (a2,b2), (a3,b2) x2; a: a1,a2 -> a12 -> *, a3 -> a3 -> *;
b: b1,b2 -> *. At (1, 0) the classes are (a12,b1): 3, (a12,b2): 1, (a3,b2): 2.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine.criteria import Criterion, KAnonymity
from apps.engine.search import exhaustive_search, optimal_search
from apps.engine.search.feasibility import check_feasibility
from tests.engine.test_loss import tiny
from tests.engine.test_search_properties import LIMITS
from tests.engine.test_sensitive import SENSITIVE_TREE, SPECS, build
from tests.engine.test_sensitive_search import criteria, data_sets


def test_caps_that_block_every_solution_are_named_with_the_way_out() -> None:
    # k = 2, no suppression, a capped at 1 and b at 0: the top within the caps is (1, 0),
    # which leaves (a12,b2) alone: 1 record of 6 suppressed, more than the 0 allowed.
    found = check_feasibility(
        tiny(), KAnonymity(2), suppression_limit=0.0, max_levels={"a": 1, "b": 0}
    )
    assert (found.nodes, found.nodes_uncapped) == (2, 6)
    assert found.top_levels == {"a": 1, "b": 0}
    assert not found.feasible and found.feasible_without_caps
    assert (found.suppressed_rows_at_top, round(found.suppressed_share_at_top, 4)) == (1, 0.1667)
    # Lifting either cap alone reaches a node with no record suppressed: (2,0) or (1,1).
    assert [(c.column, c.cap, c.height, c.lifting_it_suffices) for c in found.caps] == [
        ("a", 1, 2, True),
        ("b", 0, 1, True),
    ]
    assert found.explanation == (
        "With a capped at level 1 of 2, b capped at level 0 of 1, no solution exists: even "
        "the most generalized data suppresses 1 record (16.7 %), more than the 0.0 % allowed "
        "(0 records). To find one, lift the cap on a or on b or allow 17 % suppression."
    )
    # The search agrees: nothing within the caps passes.
    assert (
        optimal_search(
            tiny(), KAnonymity(2), suppression_limit=0.0, max_levels={"a": 1, "b": 0}
        ).solution
        is None
    )


def test_within_the_suppression_limit_a_solution_exists() -> None:
    # 20 % of 6 rows allows 1 suppressed record: the top (1, 0) passes.
    found = check_feasibility(
        tiny(), KAnonymity(2), suppression_limit=0.2, max_levels={"a": 1, "b": 0}
    )
    assert found.feasible and found.explanation.endswith("a solution exists.")
    assert (
        optimal_search(
            tiny(), KAnonymity(2), suppression_limit=0.2, max_levels={"a": 1, "b": 0}
        ).solution
        is not None
    )


def test_a_target_no_generalization_can_meet_says_to_revisit_the_threshold() -> None:
    # k = 7 > 6 records: even the single class of all six records is too small.
    found = check_feasibility(tiny(), KAnonymity(7), suppression_limit=0.05)
    assert not found.feasible and not found.feasible_without_caps and found.caps == ()
    assert found.suppressed_share_at_top == 1.0
    assert "revisit the threshold or the context risk" in found.explanation
    assert found.estimated_seconds >= 0 and found.exact_search_possible


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=data_sets(),
    specs=st.lists(SPECS, min_size=1, max_size=2, unique=True),
    criterion=criteria,
    limit=st.sampled_from(LIMITS),
)
def test_with_privacy_models_the_check_never_contradicts_the_search(
    data: tuple[list[tuple[str | None, ...]], dict[str, list[list[str]]]],
    specs: list[str],
    criterion: Criterion,
    limit: float,
) -> None:
    # "A solution exists" only where one does; "no solution exists" only where none does;
    # otherwise (models not monotone with suppression) the check says it cannot tell.
    rows, hiers = data
    problem, table = build(rows, hiers, specs, SENSITIVE_TREE)
    found = check_feasibility(problem, criterion, suppression_limit=limit, sensitive=table)
    best, _ = exhaustive_search(problem, criterion, suppression_limit=limit, sensitive=table)
    if found.feasible:
        assert best is not None
        assert found.undecided is None
        assert any(
            words in found.explanation for words in ("a solution exists", "should find a solution")
        )
    elif not found.undecided:
        assert best is None
        assert "no solution exists" in found.explanation.lower()
    else:
        assert "No solution is certain" in found.explanation
        assert not table.monotone_with_suppression and limit > 0
