"""The demo hospital visits (issue 25): several rows per patient, skewed visits and
diagnoses, valid ICD-10 codes from the engine's own list, deterministic; seed_demo loads
them beside the register with an assessment whose person key is the chart number, and
Step 4 on it counts patients, not visits."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from django.core.management import call_command

from apps.datasets.demo_visits import (
    DEFAULT_VISITS_SEED,
    MAX_VISITS,
    VISIT_COLUMNS,
    generate_visits,
    tail_categories,
)
from apps.engine.longitudinal.codes import ICD10, code_ranges, icd10_category, icd10_hierarchy


@pytest.fixture(scope="module")
def visits() -> pl.DataFrame:
    return generate_visits(2000)


def test_one_row_per_visit_several_per_patient(visits: pl.DataFrame) -> None:
    assert visits.columns == list(VISIT_COLUMNS)
    assert visits.schema["admission_date"] == pl.Date
    assert visits.schema["birth_year"] == pl.Int64
    per_patient = visits.group_by("chart_number").len().get_column("len")
    assert per_patient.len() == 2000  # every patient has at least one visit
    assert 2000 < visits.height < 2000 * MAX_VISITS
    assert per_patient.min() == 1 and per_patient.max() <= MAX_VISITS
    # Skewed: most patients come once, a few often (at least ten visits).
    once = int((per_patient == 1).sum())
    assert 0.4 * 2000 < once < 0.7 * 2000
    assert int((per_patient >= 10).sum()) >= 20
    assert (per_patient == 1).sum() > (per_patient == 2).sum() > (per_patient == 5).sum()
    # Sex, birth year and area belong to the patient: one value on all of their visits.
    constant = visits.group_by("chart_number").agg(pl.col("sex", "birth_year", "fsa").n_unique())
    assert constant.select(pl.col("sex", "birth_year", "fsa").max()).row(0) == (1, 1, 1)
    assert visits.get_column("chart_number").str.contains(r"^CH\d{6}$").all()


def test_visits_follow_each_other_and_death_ends_them(visits: pl.DataFrame) -> None:
    ordered = visits.with_columns(
        discharge=pl.col("admission_date") + pl.duration(days=pl.col("length_of_stay")),
        visit=pl.int_range(pl.len()).over("chart_number"),
        visits=pl.len().over("chart_number"),
    )
    dates = ordered.get_column("admission_date")
    assert dates.min() >= dt.date(2021, 1, 1) and dates.max() <= dt.date(2024, 12, 31)
    following = ordered.with_columns(
        next_admission=pl.col("admission_date").shift(-1).over("chart_number")
    ).drop_nulls("next_admission")
    assert (following["next_admission"] > following["discharge"]).all()
    died = ordered.filter(pl.col("discharge_disposition") == "Died in hospital")
    assert died.height > 0
    assert (died["visit"] == died["visits"] - 1).all()  # no visit after a death
    assert (visits.get_column("length_of_stay") >= 1).all()


def test_codes_are_icd10_from_the_engine_list_with_a_skew(visits: pl.DataFrame) -> None:
    codes = visits.get_column("diagnosis_code")
    # The engine's own ICD-10 hierarchy (strict) accepts every code: each has a category
    # inside a WHO block and chapter of apps/engine/longitudinal/data/icd10_who.csv.
    hierarchy = icd10_hierarchy("diagnosis_code", codes.unique().to_list())
    assert len(hierarchy.rows) == codes.n_unique()
    blocks = [r for r in code_ranges(ICD10) if r.level == "block"]
    for code in codes.unique().to_list():
        category = icd10_category(code)
        assert category is not None
        assert any(b.start <= category <= b.end for b in blocks), code
    assert set(tail_categories()) <= {
        f"{b.start[0]}{n:02d}" for b in blocks for n in range(100)
    } | {f"{b.end[0]}{n:02d}" for b in blocks for n in range(100)}
    # Skewed: a handful of codes carry most visits, and a long tail is there.
    counts = codes.value_counts(sort=True).get_column("count")
    assert counts.head(10).sum() > 0.5 * visits.height
    assert codes.n_unique() > 200
    # Deliveries only for women of child-bearing age; prostate cancer only for men.
    births = visits.filter(pl.col("diagnosis_code") == "O80")
    assert births.height > 0 and (births["sex"] == "F").all()
    ages = births["admission_date"].dt.year() - births["birth_year"]
    assert ages.min() >= 18 and ages.max() <= 45
    assert (visits.filter(pl.col("diagnosis_code") == "C61")["sex"] == "M").all()


def test_deterministic_for_a_seed() -> None:
    assert generate_visits(150, seed=DEFAULT_VISITS_SEED).equals(generate_visits(150))
    assert not generate_visits(150, seed=1).equals(generate_visits(150, seed=2))
    assert generate_visits(0).height == 0
    with pytest.raises(ValueError):
        generate_visits(-1)


def test_seed_demo_loads_both_data_sets_and_the_visits_assessment(db, settings, tmp_path):
    from apps.assessments.models import Assessment
    from apps.classification.models import Variable
    from apps.datasets.models import Dataset

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", rows=60, patients=150)
    call_command("seed_demo", rows=60, patients=150)  # idempotent
    datasets = {d.name: d for d in Dataset.objects.filter(organization__slug="demo")}
    assert set(datasets) == {"Demo patient register", "Demo hospital visits"}
    register, visits = datasets["Demo patient register"], datasets["Demo hospital visits"]
    assert register.status == "converting"  # the worker reads the register
    expected = generate_visits(150)
    assert (visits.status, visits.rows) == ("ready", expected.height)
    roles = dict(Variable.objects.filter(dataset=visits).values_list("name", "role"))
    assert roles == {
        "chart_number": "direct",
        "sex": "quasi",
        "birth_year": "quasi",
        "fsa": "quasi",
        "admission_date": "quasi",
        "diagnosis_code": "quasi",
        "length_of_stay": "quasi",
        "discharge_disposition": "sensitive",
    }
    assessment = Assessment.objects.get(dataset=visits)  # one, though seeded twice
    assert assessment.person_key == "chart_number"
    # Suggested from the data: constant within every patient → person-level.
    assert assessment.person_levels == {
        "sex": "person",
        "birth_year": "person",
        "fsa": "person",
        "admission_date": "event",
        "diagnosis_code": "event",
        "length_of_stay": "event",
    }
    assert (tmp_path / "demo" / "demo_visits.csv").exists()


def _engine(frame: pl.DataFrame, person_quasi: list[str], event_quasi: list[str]):  # type: ignore[no-untyped-def]
    from apps.engine.longitudinal import REPORTED_POWERS, from_long_table, measure, prepare

    data = from_long_table(
        frame, person="chart_number", person_quasi=person_quasi, event_quasi=event_quasi
    )
    return measure(prepare(data), power=3, by_power=REPORTED_POWERS)


def _agrees(result: dict, expected, rows: int) -> None:  # type: ignore[no-untyped-def,type-arg]
    assert result["unit"] == "person"
    assert (result["persons"], result["events"], result["rows"]) == (expected.persons, rows, rows)
    assert result["power"] == "3"
    assert result["min_class_size"] == expected.min_class_size
    assert result["max_risk"] == pytest.approx(expected.max_risk)
    assert result["average_risk"] == pytest.approx(expected.average_risk)
    assert result["persons_at_risk"]["persons"] == expected.persons_at_risk
    assert result["person_classes"] == expected.classes
    table = {row["power"]: row for row in result["by_power"]}
    assert list(table) == ["1", "2", "3", "4", "5", "all"]
    for key, figures in expected.by_power.items():
        assert table[key]["min_class_size"] == figures.min_class_size, key
        assert table[key]["average_risk"] == pytest.approx(figures.average_risk), key


def test_step4_on_the_demo_visits_counts_patients(db, settings, tmp_path):
    from apps.assessments import persons, services
    from apps.assessments.models import Assessment
    from apps.classification.models import Variable
    from apps.classification.services import RoleDecision, variables_classify
    from tests.assessments.conftest import _run

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", rows=40)  # the visits at their default size, 2,000 patients
    assessment = Assessment.objects.get(dataset__name="Demo hospital visits")
    analyst = assessment.created_by
    services.assessment_set_release(assessment=assessment, release_model="public")
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    assessment.refresh_from_db()

    # Independently: the generator's frame, measured by the engine directly at power 3.
    frame = generate_visits(2000)
    patients = frame.get_column("chart_number").n_unique()
    assert patients == 2000 < frame.height
    full = _engine(
        frame, ["sex", "birth_year", "fsa"], ["admission_date", "diagnosis_code", "length_of_stay"]
    )
    assert full.persons == 2000 and full.events == frame.height
    _agrees(assessment.risk_result, full, frame.height)
    # Raw admission dates make almost every patient unique (risk 1 for all but a few).
    assert full.max_risk == 1.0 and full.average_risk > 0.99

    # The analyst keeps only sex, birth year and diagnosis as quasi-identifiers: the
    # figures move with the power (a patient known by more visits is easier to single
    # out) and still match the engine's, over 2,000 patients and not their visits.
    variables = {v.name: v for v in Variable.objects.filter(dataset=assessment.dataset)}
    variables_classify(
        dataset=assessment.dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(variables[name].id), "other", "Not known outside the hospital.")
            for name in ("fsa", "admission_date", "length_of_stay")
        ],
    )
    assessment.refresh_from_db()
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="chart_number")
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    fewer = _engine(frame, ["sex", "birth_year"], ["diagnosis_code"])
    _agrees(assessment.risk_result, fewer, frame.height)
    by_power = {r["power"]: r["average_risk"] for r in assessment.risk_result["by_power"]}
    assert by_power["1"] < by_power["3"] < by_power["all"] < 1.0
    assert assessment.risk_result["person_classes"] < 2000
