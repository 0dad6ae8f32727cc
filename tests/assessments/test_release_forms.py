"""Step 7's other release forms (issue 28): a table with complementary suppression and
synthetic data, each written by its own job, frozen and approved like microdata.

The table is hand-computed.  Sex × city, 73 people:

            Ottawa  Toronto  Windsor | Total
    F          12       20        3  |   35
    M          14       11       13  |   38
    Total      26       31       16  |   73

With a threshold of 5, (F, Windsor) = 3 is the one primary cell.  The rectangles through
it are (F,Ottawa)+(M,Windsor)+(M,Ottawa) (39 people) and (F,Toronto)+(M,Windsor)+
(M,Toronto) (44): both give a width of at least 5, the cheaper is the first.  With the four
corners hidden the totals leave one free value: (F, Windsor) = x with x in [0, 15],
(F, Ottawa) = 15 − x in [0, 15], (M, Ottawa) = 11 + x in [11, 26], (M, Windsor) = 16 − x in
[1, 16]: every range is 15 wide, at least the 5 required, so the audit passes.
"""

from __future__ import annotations

import io
import random

import polars as pl
import pytest
from django.core.files.storage import default_storage

from apps.assessments.release_forms import services as forms
from apps.assessments.release_forms.config import ReleaseForm, parse
from apps.audit.models import AuditEvent
from apps.classification.services import variables_accept_suggestions
from apps.core.errors import ApplicationError
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import WAIVER, _run, through_risk, uploaded_register

pytestmark = pytest.mark.django_db


def table_people() -> pl.DataFrame:
    cells = {
        ("F", "Ottawa"): 12,
        ("F", "Toronto"): 20,
        ("F", "Windsor"): 3,
        ("M", "Ottawa"): 14,
        ("M", "Toronto"): 11,
        ("M", "Windsor"): 13,
    }
    rows: dict[str, list[str]] = {"email": [], "sex": [], "city": []}
    for (sex, city), n in cells.items():
        for _ in range(n):
            rows["email"].append(f"p{len(rows['email'])}@example.org")
            rows["sex"].append(sex)
            rows["city"].append(city)
    return pl.DataFrame(rows)


def at_step_7(custodian, analyst, frame: pl.DataFrame):  # type: ignore[no-untyped-def]
    """``frame`` uploaded, its suggested roles accepted, a public release at low invasion
    of privacy (threshold 0.1), Step 4 measured."""
    dataset = uploaded_register(custodian, analyst, frame)
    variables_accept_suggestions(dataset=dataset, user=analyst)
    return through_risk(custodian, analyst, dataset)


@pytest.fixture
def table_assessment(custodian, analyst):  # type: ignore[no-untyped-def]
    return at_step_7(custodian, analyst, table_people())


def pattern_people(n: int = 1000, seed: int = 5) -> pl.DataFrame:
    """Ages 30-49 and sex at random; the diagnosis a function of sex (F: asthma, M:
    diabetes). A generator that learnt the pattern draws records that, wherever they agree
    with a person on age and sex, equal them on every column: linkability and inference
    succeed on 100 % of the people it learnt from and of the people held back alike."""
    rng = random.Random(seed)
    rows: dict[str, list[str]] = {"email": [], "age": [], "sex": [], "diagnosis": []}
    for i in range(n):
        sex = rng.choice("FM")
        rows["email"].append(f"p{i}@example.org")
        rows["age"].append(str(rng.choice(range(30, 50))))
        rows["sex"].append(sex)
        rows["diagnosis"].append("J45 Asthma" if sex == "F" else "E11 Diabetes")
    return pl.DataFrame(rows)


@pytest.fixture
def synthetic_assessment(custodian, analyst):  # type: ignore[no-untyped-def]
    return at_step_7(custodian, analyst, pattern_people())


def stored_bytes(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read()


# --------------------------------------------------------------------------- parsing


def test_the_parser_names_the_field_it_refuses() -> None:
    for data, field in (
        ({"form": "query"}, "form"),
        ({"synthetic": {"rows": 0}}, "synthetic.rows"),
        ({"synthetic": {"rows": "many"}}, "synthetic.rows"),
        ({"synthetic": {"control_share": 0.9}}, "synthetic.control_share"),
        ({"synthetic": {"columns": "age"}}, "synthetic.columns"),
        ({"synthetic": {"columns": ["age", "age"]}}, "synthetic.columns"),
        ({"table": {"threshold": 1}}, "table.threshold"),
        ({"table": {"rows": "sex", "columns": "sex"}}, "table"),
    ):
        with pytest.raises(ApplicationError) as refused:
            parse(data)
        assert refused.value.extra == {"field": field}, data


def test_a_stored_form_reads_back_as_it_was_parsed() -> None:
    form = parse(
        {
            "form": "table",
            "table": {"rows": "sex", "columns": "city", "threshold": "5"},
            "synthetic": {"rows": "100", "control_share": "0.25"},
        }
    )
    assert form.table.threshold == 5 and form.synthetic.rows == 100
    assert form.synthetic.control_share == 0.25
    assert ReleaseForm.from_json(form.to_json()) == form
    # Parsing part of it keeps the rest.
    assert parse({"form": "synthetic"}, base=form).table == form.table


def test_settings_are_checked_against_the_data_set(table_assessment, analyst) -> None:
    for data, field in (
        ({"table": {"rows": "email", "columns": "city"}}, "table.rows"),
        ({"table": {"rows": "sex", "columns": "weight"}}, "table.columns"),
        ({"table": {"rows": "sex", "columns": "city", "value": "city"}}, "table.value"),
        ({"synthetic": {"columns": ["sex", "email"]}}, "synthetic.columns"),
        ({"synthetic": {"columns": ["sex", "city"], "secret": "age"}}, "synthetic.secret"),
    ):
        with pytest.raises(ApplicationError) as refused:
            forms.release_form_save(assessment=table_assessment, user=analyst, data=data)
        assert refused.value.extra == {"field": field}, data
    table_assessment.refresh_from_db()
    assert "release_form" not in table_assessment.deid_config  # nothing half-saved


def test_microdata_has_no_form_job_and_an_incomplete_table_is_refused(
    table_assessment, analyst
) -> None:
    with pytest.raises(ApplicationError, match="search and apply"):
        forms.release_form_start(assessment=table_assessment, user=analyst)
    forms.release_form_save(assessment=table_assessment, user=analyst, data={"form": "table"})
    with pytest.raises(ApplicationError, match="row and column variables"):
        forms.release_form_start(assessment=table_assessment, user=analyst)


# --------------------------------------------------------------------------- table


def test_a_table_release_names_its_primary_and_complementary_cells(
    table_assessment, analyst, reviewer
) -> None:
    forms.release_form_save(
        assessment=table_assessment,
        user=analyst,
        data={"form": "table", "table": {"rows": "sex", "columns": "city", "threshold": 5}},
    )
    assert AuditEvent.objects.filter(action="assessment.deidentify.release_form").exists()
    job = _run(forms.release_form_start(assessment=table_assessment, user=analyst))
    assert job.kind == "assessment-table"
    table_assessment.refresh_from_db()
    result = table_assessment.apply_result
    assert table_assessment.apply_job_id == job.id
    assert result["form"] == "table" and result["passes"] is True
    table = result["table"]
    assert table["cells"] == 6 and table["threshold"] == 5
    assert table["primary"] == [{"row": "F", "column": "Windsor"}]
    assert table["complementary"] == [
        {"row": "F", "column": "Ottawa"},
        {"row": "M", "column": "Ottawa"},
        {"row": "M", "column": "Windsor"},
    ]
    ranges = {
        (a["row"], a["column"]): (round(a["lower"], 6), round(a["upper"], 6))
        for a in table["audit"]
    }
    assert ranges == (
        {
            ("F", "Ottawa"): (0, 15),
            ("F", "Windsor"): (0, 15),
            ("M", "Ottawa"): (11, 26),
            ("M", "Windsor"): (1, 16),
        }
    )
    assert all(a["required_width"] == 5 and a["protected"] for a in table["audit"])
    # The published file: hidden cells empty, every total kept.
    csv = stored_bytes(table_assessment.output_csv_path).decode()
    assert csv.splitlines() == [
        "sex,Ottawa,Toronto,Windsor,Total",
        "F,,20,,35",
        "M,,11,,38",
        "Total,26,31,16,73",
    ]
    published = pl.read_parquet(io.BytesIO(stored_bytes(table_assessment.output_parquet_path)))
    assert published.get_column("Total").to_list() == [35, 38, 73]
    import hashlib

    assert result["sha256"]["csv"] == hashlib.sha256(csv.encode()).hexdigest()

    # Frozen and approved like microdata: the decision's record names the file's digest.
    from apps.assessments import services

    services.assessment_accept_utility(
        assessment=table_assessment, note="Counts by sex and city are what was asked."
    )
    assessment_submit(
        assessment=table_assessment, user=analyst, note="Table release.", intruder_waiver=WAIVER
    )
    submitted = AuditEvent.objects.get(action="assessment.submit")
    assert submitted.details["release_files"]["release_csv"] == result["sha256"]["csv"]
    review_decide(
        assessment=table_assessment, reviewer=reviewer, decision="approve", reasons="Protected."
    )
    table_assessment.refresh_from_db()
    assert table_assessment.status == "approved"
    # A frozen version's form is never changed, nor its job run again.
    with pytest.raises(ApplicationError):
        forms.release_form_save(
            assessment=table_assessment, user=analyst, data={"form": "synthetic"}
        )
    with pytest.raises(ApplicationError):
        forms.release_form_start(assessment=table_assessment, user=analyst)


def test_a_cell_whose_totals_are_too_small_fails_the_table(custodian, analyst) -> None:
    # (M, Windsor) = 2 with an M total of 4 < the width 5: no pattern can hide it.
    frame = pl.DataFrame(
        {
            "email": [f"p{i}@example.org" for i in range(40)],
            "sex": ["F"] * 36 + ["M"] * 4,
            "city": ["Ottawa"] * 12
            + ["Toronto"] * 12
            + ["Windsor"] * 12
            + ["Ottawa"] * 1
            + ["Toronto"] * 1
            + ["Windsor"] * 2,
        }
    )
    dataset = uploaded_register(custodian, analyst, frame)
    variables_accept_suggestions(dataset=dataset, user=analyst)
    assessment = through_risk(custodian, analyst, dataset)
    forms.release_form_save(
        assessment=assessment,
        user=analyst,
        data={"form": "table", "table": {"rows": "sex", "columns": "city", "threshold": 5}},
    )
    _run(forms.release_form_start(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    table = assessment.apply_result["table"]
    assert assessment.apply_result["passes"] is False
    assert {(c["row"], c["column"]) for c in table["unprotectable"]} == {
        ("M", "Ottawa"),
        ("M", "Toronto"),
        ("M", "Windsor"),
    }
    from apps.reviews.submissions import submission_blockers

    assert "The de-identified file does not meet the risk target (Step 7)." in (
        submission_blockers(assessment)
    )


# --------------------------------------------------------------------------- synthetic


def test_a_synthetic_release_is_attacked_like_every_release(synthetic_assessment, analyst) -> None:
    forms.release_form_save(
        assessment=synthetic_assessment, user=analyst, data={"form": "synthetic"}
    )
    job = _run(forms.release_form_start(assessment=synthetic_assessment, user=analyst))
    assert job.kind == "assessment-synthetic"
    synthetic_assessment.refresh_from_db()
    result = synthetic_assessment.apply_result
    # 1,000 people, 200 (20 %) held back: the generator learns from 800 and draws as many.
    assert result["rows_in"] == 1000 and result["rows_out"] == 800
    assert result["synthetic"]["training_rows"] == 800
    assert result["synthetic"]["columns"] == ["age", "sex", "diagnosis"]
    assert result["synthetic"]["secret"] == "diagnosis"
    assert set(result["synthetic"]["marginal"]) == {"age", "sex", "diagnosis"}
    attacks = result["attacks"]
    assert attacks["release_kind"] == "synthetic"
    assert attacks["known_columns"] == ["age", "sex"]
    # 200 targets: min(500, 800 people learnt from, 200 held back).
    assert attacks["targets"] == 200
    rates = {
        (r["criterion"], r["variant"]): (r["attack"]["rate"], r["control"]["rate"])
        for r in attacks["results"]
    }
    assert set(rates) == {
        ("singling_out", "exact match"),
        ("linkability", "exact match"),
        ("linkability", "nearest match"),
        ("inference", "diagnosis"),
    }
    # The pattern, not the people (pattern_people): 100 % on both sides, nothing remembered.
    for key in (("linkability", "exact match"), ("inference", "diagnosis")):
        assert rates[key] == (1.0, 1.0), key
    for r in attacks["results"]:
        assert r["attack"]["trials"] == 200 and r["control"]["trials"] == 200
        assert 0 <= r["attack"]["low"] <= r["attack"]["rate"] <= r["attack"]["high"] <= 1
    assert attacks["tolerance"] == pytest.approx(0.1)
    assert result["passes"] is True
    released = pl.read_parquet(io.BytesIO(stored_bytes(synthetic_assessment.output_parquet_path)))
    assert released.columns == ["age", "sex", "diagnosis"] and released.height == 800
    # Every synthetic record keeps the pattern.
    assert set(released.select("sex", "diagnosis").unique().rows()) <= {
        ("F", "J45 Asthma"),
        ("M", "E11 Diabetes"),
    }


def test_synthetic_attacks_are_judged_against_the_held_back_people() -> None:
    """Linkability of 35 % on the people learnt from, 31 % on those held back, 1 % for a
    naive intruder: the generator remembered 4 points' worth (within 10 %), whereas the
    same figures on a release derived row by row would be 34 points above the baseline."""
    from apps.assessments.attack_tests import verdict

    def rate(value: float) -> dict[str, float]:
        return {"rate": value}

    result = {
        "criterion": "linkability",
        "variant": "exact match",
        "attack": rate(0.35),
        "control": rate(0.31),
        "baseline": rate(0.01),
    }
    synthetic = verdict(result, 0.1, synthetic=True)
    assert synthetic["within"] is True and synthetic["gap"] == pytest.approx(0.04)
    assert "held back from the generator" in synthetic["text"]
    records = verdict(result, 0.1)
    assert records["within"] is False and records["gap"] == pytest.approx(0.34)


def test_records_are_not_written_while_another_form_is_chosen(table_assessment, analyst) -> None:
    from apps.assessments.release_apply import assessment_start_apply

    forms.release_form_save(assessment=table_assessment, user=analyst, data={"form": "table"})
    with pytest.raises(ApplicationError) as refused:
        assessment_start_apply(assessment=table_assessment, user=analyst)
    assert refused.value.status == 409
    assert "aggregated table with complementary suppression" in refused.value.message


def test_a_records_job_queued_before_another_form_was_chosen_writes_nothing(
    table_assessment, analyst
) -> None:
    """The apply job checks the form again under the row lock before it writes."""
    from apps.assessments import deidentify
    from apps.assessments.release_apply import assessment_start_apply
    from apps.jobs.claiming import job_execute

    _run(deidentify.assessment_start_search(assessment=table_assessment, user=analyst))
    table_assessment.refresh_from_db()
    job = assessment_start_apply(assessment=table_assessment, user=analyst)
    forms.release_form_save(assessment=table_assessment, user=analyst, data={"form": "table"})
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    table_assessment.refresh_from_db()
    assert job.status == "failed" and "The release form changed" in job.error
    assert table_assessment.apply_result is None and not table_assessment.output_csv_path
