"""Attacks on releases derived row by row, on hand-made data whose outcome is known."""

from __future__ import annotations

from datetime import date, timedelta

import numpy as np
import polars as pl
import pytest

from apps.engine.attacks import (
    EXACT,
    INFERENCE,
    LINKABILITY,
    NEAREST,
    SINGLING_OUT,
    AttackReport,
    QuasiIdentifier,
    attack_release,
    wilson,
)
from apps.engine.errors import EngineInputError
from apps.engine.hierarchies import hierarchy_from_rows
from apps.engine.techniques._common import row_codes
from apps.engine.techniques.local_suppression import LocalSuppressionParams, local_suppression
from apps.engine.techniques.local_suppression.rules import class_sizes


def _shuffled(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sample(fraction=1.0, shuffle=True, seed=11)


def _rates(report: AttackReport, criterion: str, variant: str) -> tuple[float, float, float]:
    found = report.result(criterion, variant)
    return found.attack.rate, found.control.rate, found.baseline.rate


UNIQUE = pl.DataFrame(
    {
        "zip": [f"K{i:03d}" for i in range(100)],
        "diagnosis": ["flu", "asthma"] * 50,
    }
)


def test_unique_records_released_unchanged_are_all_singled_out_and_linked() -> None:
    report = attack_release(
        UNIQUE,
        _shuffled(UNIQUE),
        quasi=[QuasiIdentifier("zip")],
        sensitive=["diagnosis"],
        seed=5,
        targets=40,
    )
    assert report.targets == 40 and report.release_rows == 100
    # Every person is alone in the release: the description isolates their own record.
    assert _rates(report, SINGLING_OUT, EXACT)[:2] == (1.0, 0.0)
    # Linked every time; a control person's record is out, so nobody of theirs is left.
    assert _rates(report, LINKABILITY, EXACT) == (1.0, 0.0, pytest.approx(1 / 100))
    assert _rates(report, LINKABILITY, NEAREST)[:2] == (1.0, 0.0)
    linked = report.result(LINKABILITY, EXACT)
    assert linked.attacks == 40
    assert (linked.attack.low, linked.attack.high) == wilson(40, 40)
    assert (linked.control.low, linked.control.high) == wilson(0, 40)
    assert linked.advantage.value == 1.0
    # Their own record gives their diagnosis away; without it, the nearest records (all
    # the others: 50 of the other value, 49 of theirs) point to the other value.
    assert _rates(report, INFERENCE, "diagnosis") == (1.0, 0.0, 0.5)


def _grouped(size: int, rows: int = 200) -> tuple[pl.DataFrame, dict[str | None, str | None]]:
    data = pl.DataFrame(
        {"age": [str(20 + i) for i in range(rows)], "sex": ["F", "M"] * (rows // 2)}
    )
    labels: dict[str | None, str | None] = {
        str(20 + i): f"{20 + size * (i // size)}-{20 + size * (i // size) + size - 1}"
        for i in range(rows)
    }
    return data, labels


def test_generalized_to_k10_links_at_most_one_in_ten() -> None:
    data, labels = _grouped(10)
    age = QuasiIdentifier("age", labels)
    released = _shuffled(data.with_columns(age.apply(data["age"])))
    report = attack_release(data, released, quasi=[age], seed=1, targets=60)
    attack, control, baseline = _rates(report, LINKABILITY, EXACT)
    # Each person is one of 10 identical records: the intruder's pick is right 1 time in 10.
    assert attack == pytest.approx(0.1) and attack <= 0.1 + baseline
    assert control == 0.0 and baseline == pytest.approx(1 / 200)
    assert _rates(report, SINGLING_OUT, EXACT)[:2] == (0.0, 0.0)


def test_pairs_isolate_the_control_not_the_people() -> None:
    # Classes of exactly 2: a person in the data is never alone; had they not been in it,
    # their description would isolate the one record left (someone else's).
    data, labels = _grouped(2, rows=100)
    age = QuasiIdentifier("age", labels)
    released = _shuffled(data.with_columns(age.apply(data["age"])))
    report = attack_release(data, released, quasi=[age], seed=2, targets=30)
    assert _rates(report, SINGLING_OUT, EXACT)[:2] == (0.0, 1.0)
    assert _rates(report, LINKABILITY, EXACT)[:2] == (0.5, 0.0)


def test_inference_on_a_homogeneous_class() -> None:
    # Classes of 10 by age band; bands 20-29 and 40-49 are all "diabetes", the others
    # mixed 7 "none" / 3 "diabetes".
    data, labels = _grouped(10, rows=100)
    band = [int(a) // 10 for a in data["age"]]
    diagnosis = [
        "diabetes" if b in (2, 4) or (int(a) % 10) < 3 else "none"
        for a, b in zip(data["age"], band, strict=True)
    ]
    data = data.with_columns(pl.Series("diagnosis", diagnosis))
    age = QuasiIdentifier("age", labels)
    released = _shuffled(data.with_columns(age.apply(data["age"])))
    report = attack_release(
        data, released, quasi=[age], sensitive=["diagnosis"], seed=3, targets=40
    )
    values = dict(zip(data["age"], data["diagnosis"], strict=True))

    def expected(rows: tuple[int, ...], left_out: bool) -> float:
        right = 0.0
        for row in rows:
            a = data["age"][row]
            mates = [values[str(x)] for x in range(10 * (int(a) // 10), 10 * (int(a) // 10) + 10)]
            if left_out:
                mates.remove(values[a])
            counts = {v: mates.count(v) for v in set(mates)}
            top = max(counts.values())
            modes = [v for v, n in counts.items() if n == top]
            right += (values[a] in modes) / len(modes)
        return right / len(rows)

    found = report.result(INFERENCE, "diagnosis")
    # In a homogeneous class everyone's value is inferred, in the data or not; in a mixed
    # one the majority's (7 of 10, 6 of 9 when one of them is out).
    assert found.attack.rate == pytest.approx(expected(report.attack_rows, left_out=False))
    assert found.control.rate == pytest.approx(expected(report.control_rows, left_out=True))
    homogeneous = [r for r in report.attack_rows if int(data["age"][r]) // 10 in (2, 4)]
    assert homogeneous and expected(tuple(homogeneous), left_out=False) == 1.0
    # Naive: the release's most frequent value, diabetes (2·10 + 8·3 = 44) < none (56).
    truth = [values[data["age"][r]] for r in report.attack_rows]
    assert found.baseline.rate == pytest.approx(truth.count("none") / len(truth))


def test_singling_out_on_a_hierarchy_with_unique_and_shared_classes() -> None:
    # A hierarchy (the apply step's mapping): 3 people alone in their class, the rest in
    # classes of 5 or more; singling out succeeds exactly for the three.
    rows = [["A1", "A"], ["A2", "A"], ["B1", "B"], ["B2", "B"], ["C1", "C1"], ["C2", "C2"]]
    rows += [["D1", "D"]]
    hierarchy = hierarchy_from_rows("code", rows)
    codes = ["A1", "A2"] * 5 + ["B1", "B2", "B1", "B2", "B1"] + ["C1", "C2", "D1"]
    data = pl.DataFrame({"code": codes})
    quasi = QuasiIdentifier.from_hierarchy(hierarchy, 1)
    released = _shuffled(data.with_columns(quasi.apply(data["code"])))
    report = attack_release(data, released, quasi=[quasi], seed=4, targets=9)
    alone = {15, 16, 17}
    found = report.result(SINGLING_OUT, EXACT)
    assert found.attack.successes == len(alone & set(report.attack_rows))
    assert found.control.successes == 0  # the three are alone: without them, no record
    linked = report.result(LINKABILITY, EXACT)
    expected = sum(1.0 if r in alone else 1 / 10 if r < 10 else 1 / 5 for r in report.attack_rows)
    assert linked.attack.successes == pytest.approx(expected)


def test_suppressed_classes_protect_their_people() -> None:
    data, labels = _grouped(10, rows=100)
    age = QuasiIdentifier("age", labels)
    generalized = data.with_columns(age.apply(data["age"]))
    released = _shuffled(generalized.filter(~pl.col("age").is_in(["20-29", "30-39"])))
    report = attack_release(data, released, quasi=[age], seed=6, targets=50)
    expected = sum(0.0 if int(data["age"][r]) < 40 else 0.1 for r in report.attack_rows)
    assert report.result(LINKABILITY, EXACT).attack.successes == pytest.approx(expected)
    assert report.release_rows == 80


def test_perturbed_numbers_are_reached_by_nearest_match_only() -> None:
    # Ages 0, 10, …, 990 released with +1 (a technique's output, row by row): no released
    # value equals a true one, yet each person's nearest released record is their own.
    data = pl.DataFrame({"age": [10 * i for i in range(100)]})
    released = data.with_columns(pl.col("age") + 1)
    report = attack_release(
        data, released, quasi=[QuasiIdentifier("age")], seed=7, targets=25, aligned=True
    )
    assert _rates(report, LINKABILITY, EXACT)[:2] == (0.0, 0.0)
    assert _rates(report, LINKABILITY, NEAREST)[:2] == (1.0, 0.0)
    assert _rates(report, SINGLING_OUT, EXACT)[:2] == (0.0, 0.0)
    assert report.release_kind == "row-derived, row by row"


def test_a_suppressed_cell_matches_any_value() -> None:
    # Released row by row; the first person's number is suppressed ('*').
    data = pl.DataFrame({"town": ["A", "A", "B", "B"], "n": ["1", "2", "1", "2"]})
    released = data.with_columns(
        pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("*")).otherwise(pl.col("n")).alias("n")
    )
    report = attack_release(
        data,
        released,
        quasi=[QuasiIdentifier("town"), QuasiIdentifier("n")],
        seed=8,
        targets=2,
        aligned=True,
    )
    # Person 0 (A, 1) matches only (A, *): alone. Person 1 (A, 2) matches (A, *) and
    # (A, 2): a pick is right half the time. Persons 2 and 3 match their own record only.
    credit = {0: 1.0, 1: 0.5, 2: 1.0, 3: 1.0}
    found = report.result(LINKABILITY, EXACT)
    assert found.attack.successes == pytest.approx(sum(credit[r] for r in report.attack_rows))
    isolated = {0: 1.0, 1: 0.0, 2: 1.0, 3: 1.0}
    single = report.result(SINGLING_OUT, EXACT)
    assert single.attack.successes == sum(isolated[r] for r in report.attack_rows)


def test_a_shuffled_release_with_suppressed_cells_needs_its_rows() -> None:
    data = pl.DataFrame({"town": ["A", "A", "B", "B"]})
    released = pl.DataFrame({"town": ["A", "*", "B", "B"]})
    with pytest.raises(EngineInputError, match="aligned=True"):
        attack_release(data, released, quasi=[QuasiIdentifier("town")], seed=1)


def test_a_release_that_is_not_this_original_is_refused() -> None:
    data = pl.DataFrame({"town": ["A"] * 10 + ["B"] * 10})
    other = pl.DataFrame({"town": ["A"] * 2 + ["B"] * 18})
    with pytest.raises(EngineInputError, match="not this original"):
        attack_release(data, other, quasi=[QuasiIdentifier("town")], seed=1, targets=10)


def test_the_same_seed_gives_the_same_report() -> None:
    data, labels = _grouped(5)
    age = QuasiIdentifier("age", labels)
    released = _shuffled(data.with_columns(age.apply(data["age"])))
    first = attack_release(data, released, quasi=[age], sensitive=["sex"], seed=99, targets=30)
    again = attack_release(
        data.lazy(), released.lazy(), quasi=[age], sensitive=["sex"], seed=99, targets=30
    )
    other = attack_release(data, released, quasi=[age], sensitive=["sex"], seed=100, targets=30)
    assert first == again
    assert first.attack_rows != other.attack_rows
    assert first.seed == 99 and first.method_version
    assert set(first.attack_rows).isdisjoint(first.control_rows)
    unseeded = attack_release(data, released, quasi=[age], targets=30)
    assert isinstance(unseeded.seed, int)  # a fresh seed, reported


def test_the_report_as_plain_data_leaves_out_who_was_attacked() -> None:
    report = attack_release(UNIQUE, UNIQUE, quasi=[QuasiIdentifier("zip")], seed=1, targets=5)
    plain = report.to_dict()
    assert "attack_rows" not in plain and "control_rows" not in plain
    assert plain["results"][0]["attack"]["rate"] == 1.0 and plain["seed"] == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"quasi": []}, "at least one quasi-identifier"),
        ({"quasi": [QuasiIdentifier("zip")], "sensitive": ["zip"]}, "both quasi-identifier"),
        ({"quasi": [QuasiIdentifier("postcode")]}, "no column 'postcode'"),
        ({"quasi": [QuasiIdentifier("zip", {"K000": "K"})]}, "does not cover"),
    ],
)
def test_bad_inputs_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(EngineInputError, match=message):
        attack_release(UNIQUE, UNIQUE, seed=1, **kwargs)  # type: ignore[arg-type]


def test_too_few_rows_for_two_samples() -> None:
    one = pl.DataFrame({"zip": ["K1"]})
    with pytest.raises(EngineInputError, match="too few"):
        attack_release(one, one, quasi=[QuasiIdentifier("zip")], seed=1)


def test_numbers_of_a_sensitive_variable_are_inferred_by_decile() -> None:
    # Incomes 0..199: deciles of 20 values; age classes of 20 hold one decile each.
    data = pl.DataFrame({"age": [str(i // 20) for i in range(200)], "income": list(range(200))})
    report = attack_release(
        data,
        _shuffled(data),
        quasi=[QuasiIdentifier("age")],
        sensitive=["income"],
        seed=9,
        targets=50,
    )
    assert _rates(report, INFERENCE, "income")[:2] == (1.0, 1.0)


def test_blanks_of_local_suppression_agree_with_its_intruder_rule() -> None:
    # Local suppression's own measure of what an intruder faces (a blank matching any
    # value: rules.intruder_candidates) is an independent count of the exact-match
    # candidates: a person's linkage score is 1 / that count.
    rng = np.random.default_rng(3)
    data = pl.DataFrame(
        {
            "age": [f"a{v}" for v in rng.integers(0, 6, 120)],
            "sex": [f"s{v}" for v in rng.integers(0, 2, 120)],
            "zone": [f"z{v}" for v in rng.integers(0, 4, 120)],
        }
    )
    quasi = ("age", "sex", "zone")
    result = local_suppression(data, LocalSuppressionParams(quasi, k=3, method="heuristic"))
    assert result.blanked_cells > 0
    codes, _ = row_codes(data, quasi)
    sizes = class_sizes(np.where(result.blanked, 0, codes), "intruder", codes)
    report = attack_release(
        data,
        result.data,
        quasi=[QuasiIdentifier(q) for q in quasi],
        seed=12,
        targets=60,
        aligned=True,
        blank_is_wildcard=True,
    )
    expected = sum(1 / sizes[r] for r in report.attack_rows)
    assert report.result(LINKABILITY, EXACT).attack.successes == pytest.approx(expected)


def test_shifted_dates_are_reached_by_nearest_match() -> None:
    start = date(2024, 1, 1)
    data = pl.DataFrame({"visit": [start + timedelta(days=30 * i) for i in range(60)]})
    released = data.with_columns(pl.col("visit") + timedelta(days=3))
    report = attack_release(
        data, released, quasi=[QuasiIdentifier("visit")], seed=13, targets=20, aligned=True
    )
    assert _rates(report, LINKABILITY, NEAREST)[:2] == (1.0, 0.0)
    assert _rates(report, LINKABILITY, EXACT)[0] == 0.0
