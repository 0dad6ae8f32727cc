"""The hierarchy Step 7 offers first for each quasi-identifier, on data as real extracts
write it (issue #22: a new privacy officer keeps the defaults).

Dates are written in every layout profiling recognizes, not only ISO; ages, years and
amounts carry codes for a missing value ("Unknown", 999, 99999999); a small count runs from
0 to 6. The default must still be the generalization the method offers (dates to month and
year, ages in bands top-coded at 90+, numbers in intervals), the codes each kept as a group
of their own, never a silent fall back to "keep or suppress"."""

from __future__ import annotations

import datetime as dt
import random

import polars as pl
import pytest

from apps.assessments.hierarchies import hierarchies_proposed, hierarchy_of, hierarchy_set
from apps.assessments.services import assessment_create
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.datasets.profiling import DATE_FORMATS
from tests.assessments.conftest import uploaded_register

pytestmark = pytest.mark.django_db

DAY0 = dt.date(1990, 1, 1)
CODES = ("Unknown", "999")


def _register(rows: int = 600, seed: int = 31) -> tuple[pl.DataFrame, dict[str, list[dt.date]]]:
    rng = random.Random(seed)
    dates = {f"d{i}": [DAY0 + dt.timedelta(rng.randrange(12_000)) for _ in range(rows)]
             for i in range(len(DATE_FORMATS))}  # fmt: skip
    data: dict[str, list[str]] = {
        column: [day.strftime(fmt) for day in dates[column]]
        for column, fmt in zip(dates, DATE_FORMATS, strict=True)
    }
    # one date column with a code for a missing date in 3 % of the rows
    data["d0"] = ["Unknown" if i % 33 == 0 else v for i, v in enumerate(data["d0"])]
    data["years"] = [
        rng.choice(CODES) if i % 25 == 0 else str(min(104, int(rng.expovariate(1 / 40))))
        for i in range(rows)
    ]
    data["amount"] = [
        "99999999" if i % 40 == 0 else str(rng.randint(10_000, 200_000)) for i in range(rows)
    ]
    data["kids"] = [str(rng.choice([0, 0, 1, 2, 2, 3, 4, 5, 6])) for _ in range(rows)]
    return pl.DataFrame(data), dates


def _proposed(custodian, analyst, frame):  # type: ignore[no-untyped-def]
    dataset = uploaded_register(custodian, analyst, frame)
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(v.id), "quasi", f"{v.name} can be known to an intruder.")
            for v in Variable.objects.filter(dataset=dataset)
        ],
    )
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    return assessment, hierarchies_proposed(assessment=assessment)


def _groups(spec, level: int) -> dict[str, set[str]]:  # type: ignore[no-untyped-def]
    """Generalized value at ``level`` → the original values under it."""
    out: dict[str, set[str]] = {}
    for row in hierarchy_of(spec).rows:
        out.setdefault(row[level], set()).add(row[0])
    return out


def test_dates_in_every_recognized_layout_default_to_month_and_year(custodian, analyst):
    frame, dates = _register()
    assessment, proposed = _proposed(custodian, analyst, frame)
    for column, days in dates.items():
        spec = proposed[column]
        assert spec.kind == "date", (column, spec.kind, spec.params)
        assert spec.level_labels[:3] == ["original", "month", "year"], spec.level_labels
        # Month level: one group per month of the dates written, plus the code on its own.
        months = _groups(spec, 1)
        codes = set(frame[column].unique().to_list()) - {
            d.strftime(DATE_FORMATS[int(column[1:])]) for d in days
        }
        expected = {
            f"{d.year:04d}-{d.month:02d}"
            for d, v in zip(days, frame[column], strict=True)
            if v not in codes
        }
        assert set(months) == expected | codes, column
        for code in codes:
            assert months[code] == {code}
    # The default is saved as it was offered (the same settings rebuild it).
    saved = hierarchy_set(
        assessment=assessment, column="d3", kind="date", params=proposed["d3"].params
    )
    assert saved.arx_csv == proposed["d3"].arx_csv


def test_ages_with_codes_are_banded_and_top_coded_the_codes_kept_apart(custodian, analyst):
    frame, _ = _register()
    _, proposed = _proposed(custodian, analyst, frame)
    spec = proposed["years"]
    assert spec.kind == "interval", (spec.kind, spec.params)
    first = _groups(spec, 1)
    ages = {int(v) for v in frame["years"] if v not in CODES}
    assert {v for v in first.get("90+", set())} == {str(a) for a in ages if a >= 90}
    for code in CODES:
        assert first[code] == {code}
    assert "*" in _groups(spec, spec.height)


def test_numbers_get_intervals_that_generalize_whatever_their_codes(custodian, analyst):
    frame, _ = _register()
    _, proposed = _proposed(custodian, analyst, frame)
    amount = proposed["amount"]
    assert amount.kind == "interval", (amount.kind, amount.params)
    level1 = _groups(amount, 1)
    assert level1["99999999"] == {"99999999"}
    # Intervals sized on the amounts, not on the code: several groups between 10,000 and
    # 200,000, each holding several amounts.
    real = [g for g in level1 if g != "99999999"]
    assert 5 <= len(real) <= 40, real
    kids = proposed["kids"]
    assert kids.kind == "interval", (kids.kind, kids.params)
    # Each level of whole numbers groups values: none repeats the one below it.
    for level in range(1, kids.height):
        assert len(_groups(kids, level)) < len(_groups(kids, level - 1)), kids.params


def test_the_page_form_rebuilds_them_without_knowing_layouts_or_codes(
    custodian, analyst, client_for
):
    """The Step 7 form asks for the date levels and the widths only: the layout of the dates
    and the codes are read from the values again, so a person's change still builds."""
    from django.urls import reverse

    from apps.assessments.models import HierarchySpec

    frame, _ = _register()
    assessment, _ = _proposed(custodian, analyst, frame)
    url = reverse(
        "assessment-step",
        kwargs={"org": custodian.slug, "assessment_id": assessment.id, "slug": "deidentify"},
    )
    client = client_for(analyst)
    client.post(url, {"action": "hierarchy", "column": "d2", "kind": "date", "date_year": "on"})
    client.post(
        url, {"action": "hierarchy", "column": "years", "kind": "interval", "widths": "10, 20"}
    )
    specs = {s.column: s for s in HierarchySpec.objects.filter(assessment=assessment)}
    assert specs["d2"].level_labels == ["original", "year", "suppressed (*)"]
    assert specs["d2"].params["date_format"] == DATE_FORMATS[2]
    assert set(_groups(specs["years"], 1)) >= set(CODES)


def test_the_codes_are_values_a_reviewer_does_not_read(custodian, analyst, reviewer, client_for):
    """The codes kept apart are values of the column (one may be held by one record): the
    API gives them with the settings only to roles that may read the data."""
    from apps.assessments.hierarchies import hierarchies_ensure

    frame, _ = _register()
    assessment, _ = _proposed(custodian, analyst, frame)
    hierarchies_ensure(assessment=assessment)
    url = f"/api/v1/assessments/{assessment.id}/hierarchies/"
    seen = {h["column"]: h["params"] for h in client_for(analyst).get(url).json()}
    assert set(CODES) <= set(seen["years"]["codes"])
    shown = client_for(reviewer).get(url).json()
    assert all("codes" not in h["params"] for h in shown)
    assert not any(code in str(h["params"]) for h in shown for code in CODES)
