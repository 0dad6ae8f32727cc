from __future__ import annotations

import polars as pl
import pytest

from apps.engine.errors import EngineInputError
from apps.engine.frame import encode
from apps.engine.smallcells import small_cells

# 100 rows: sex F 60 / M 40; region A 97 / B 3; (M, B) 3 rows, (F, A) 60, (M, A) 37.
DATA = pl.DataFrame(
    {
        "sex": ["F"] * 60 + ["M"] * 40,
        "region": ["A"] * 60 + ["A"] * 37 + ["B"] * 3,
    }
)


def test_univariate_and_bivariate_findings() -> None:
    report = small_cells(encode(DATA, ["sex", "region"]))
    assert report.rows == 100 and (report.min_count, report.min_share) == (20, 0.05)
    assert [(c.columns, c.values, c.count) for c in report.univariate] == [(("region",), ("B",), 3)]
    assert report.univariate[0].share == pytest.approx(0.03)
    assert set(report.univariate[0].reasons) == {"fewer than 20 rows", "under 5% of rows"}
    assert [(c.values, c.count) for c in report.bivariate] == [(("M", "B"), 3)]


def test_thresholds_are_parameters() -> None:
    report = small_cells(encode(DATA, ["sex", "region"]), min_count=50, min_share=0.0)
    assert [(c.values, c.count) for c in report.univariate] == [(("B",), 3), (("M",), 40)]
    assert [c.reasons for c in report.univariate] == [("fewer than 50 rows",)] * 2
    assert [(c.values, c.count) for c in report.bivariate] == [(("M", "B"), 3), (("M", "A"), 37)]
    assert small_cells(encode(DATA, ["sex", "region"]), bivariate=False).bivariate == ()


def test_empty_and_errors() -> None:
    assert small_cells(encode(DATA.clear(), ["sex"])).univariate == ()
    with pytest.raises(EngineInputError):
        small_cells(encode(DATA, ["sex"]), min_share=2.0)
    with pytest.raises(EngineInputError, match="unknown"):
        small_cells(encode(DATA, ["sex"]), columns=["region"])
