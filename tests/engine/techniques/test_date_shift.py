"""Date shifting: hand-computed values (issue #18)."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.techniques._common import public_parameters
from apps.engine.techniques.date_shift import DOMAIN, DateShiftParams, shift_dates, shift_days

KEY = bytes(range(32))


def test_shift_days_follows_its_formula() -> None:
    digest = hmac.new(KEY, DOMAIN + b"P001", hashlib.sha256).digest()
    u = int.from_bytes(digest[:8], "big") % 60
    expected = u - 30 if u < 30 else u - 29
    assert shift_days("P001", KEY, 30) == expected
    shifts = {shift_days(f"P{i}", KEY, 3) for i in range(200)}
    assert shifts == {-3, -2, -1, 1, 2, 3}


def test_dates_of_one_person_move_together() -> None:
    data = pl.DataFrame(
        {
            "person": ["A", "A", "B"],
            "admitted": ["2024-01-10", "2024-03-01", "2024-01-10"],
            "discharged": [dt.date(2024, 1, 15), dt.date(2024, 3, 4), None],
        }
    )
    result = shift_dates(data, DateShiftParams("person", ("admitted", "discharged"), key=KEY))
    a, b = shift_days("A", KEY, 30), shift_days("B", KEY, 30)
    out = result.data
    assert out["admitted"].to_list() == [
        str(dt.date(2024, 1, 10) + dt.timedelta(days=a)),
        str(dt.date(2024, 3, 1) + dt.timedelta(days=a)),
        str(dt.date(2024, 1, 10) + dt.timedelta(days=b)),
    ]
    assert out["discharged"].to_list() == [
        dt.date(2024, 1, 15) + dt.timedelta(days=a),
        dt.date(2024, 3, 4) + dt.timedelta(days=a),
        None,
    ]
    assert result.persons == 2 and result.shifted == {"admitted": 3, "discharged": 2}
    assert "key" not in public_parameters(result.params)


def test_date_shift_errors_are_named() -> None:
    data = pl.DataFrame({"person": ["A"], "d": ["10/01/2024"]})
    with pytest.raises(EngineInputError, match="YYYY-MM-DD"):
        shift_dates(data, DateShiftParams("person", ("d",), key=KEY))
    with pytest.raises(EngineInputError, match="32 bytes"):
        shift_dates(data, DateShiftParams("person", ("d",), key=b"short"))
