"""Step 8 distributions of every variable, checked by hand."""

from __future__ import annotations

import polars as pl

from apps.engine.utility import OTHER_LABEL, release_distributions, variable_distribution

ORIGINAL = pl.DataFrame(
    {
        "email": ["a@x", "b@x", "c@x", "d@x", "e@x"],
        "age": ["30", "31", "40", "41", "90"],
        "sex": ["F", "F", "M", "M", None],
        "diagnosis": ["J45", "J45", "E11", "I10", "J45"],
    }
)
# Record 5 suppressed; age fully generalized (*); email removed; sex and diagnosis kept.
RELEASED = pl.DataFrame(
    {
        "age": ["*", "*", "*", "*"],
        "sex": ["F", "F", "M", "M"],
        "diagnosis": ["J45", "J45", "E11", "I10"],
    }
)


def test_every_variable_before_and_after() -> None:
    found = {
        d.column: d
        for d in release_distributions(
            ORIGINAL,
            RELEASED,
            quasi=["age", "sex"],
            levels={"age": 3, "sex": 0},
            tops={"age": 3, "sex": 1},
        )
    }
    # sex is a quasi-identifier still carrying values: the search's report draws it.
    assert set(found) == {"email", "age", "diagnosis"}
    assert found["email"].status == "removed" and found["email"].after == (0,) * 5
    assert found["email"].missing_after == 0 and found["email"].rows_after == 0
    # age fully suppressed: its original distribution, and every released value missing.
    age = found["age"]
    assert age.status == "suppressed"
    assert (age.labels, age.before, age.after) == (
        ("30", "31", "40", "41", "90"),
        (1, 1, 1, 1, 1),
        (0, 0, 0, 0, 0),
    )
    assert (age.missing_before, age.missing_after, age.rows_after) == (0, 4, 4)
    diagnosis = found["diagnosis"]
    assert (diagnosis.labels, diagnosis.before, diagnosis.after) == (
        ("J45", "E11", "I10"),
        (3, 1, 1),
        (2, 1, 1),
    )


def test_many_values_are_summed_and_numbers_binned() -> None:
    words = pl.Series([f"w{i:02d}" for i in range(25)] + ["w00"] * 5)
    d = variable_distribution("word", words, words.head(10), status="kept", max_values=20)
    assert d.labels[0] == "w00" and d.before[0] == 6 and d.labels[-1] == OTHER_LABEL
    assert sum(d.before) == 30 and sum(d.after) == 10
    numbers = pl.Series([float(i) for i in range(100)])
    d = variable_distribution("amount", numbers, numbers.filter(numbers < 50), status="kept")
    assert d.kind == "numeric" and len(d.labels) == 10 and d.labels[0] == "0-9.9"
    assert d.before == (10,) * 10 and d.after == (10,) * 5 + (0,) * 5
