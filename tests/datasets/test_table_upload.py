"""A person table and event tables uploaded together (issue 25): checked, joined into the
data set's long table with its structure recorded, each table profiled; refusals name the
table, the column and the persons by row numbers (never by key or value); Steps 2 and 4
work on the joined data (counts by hand)."""

import polars as pl
import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.assessments import persons, services
from apps.assessments.person_risk import person_risk_result
from apps.assessments.persons import assessment_set_persons, persons_state
from apps.audit.models import AuditEvent
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.core.errors import ApplicationError
from apps.datasets.models import Dataset
from apps.datasets.services import dataset_delete
from apps.datasets.table_upload import combined_digest, dataset_upload_tables
from apps.datasets.tables import Table, check_tables, long_view
from apps.jobs.claiming import job_execute
from apps.jobs.models import Job

# Five persons; person 4 has no events. Person-level classes (sex, birth year):
# (F,1970) {1}, (M,1980) {2,3}, (F,1990) {4,5}.
PERSONS = "patient_id,sex,birth_year\n1,F,1970\n2,M,1980\n3,M,1980\n4,F,1990\n5,F,1990\n"
# Events: 1 {J45, E11, J45}, 2 {I10}, 3 {I10, J45}, 5 {J45}: 7 visits.
VISITS = (
    "patient_id,diagnosis,length_of_stay\n"
    "1,J45,2\n1,E11,3\n1,J45,1\n2,I10,4\n3,I10,2\n3,J45,5\n5,J45,1\n"
)
PRESCRIPTIONS = "patient_id,drug\n2,A10\n4,C07\n"


def _csv(name: str, text: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, text.encode())


def _frame(text: str) -> pl.DataFrame:
    return pl.read_csv(text.encode())


def _uploaded(custodian, analyst, events: dict[str, str], persons_text: str = PERSONS):
    dataset = dataset_upload_tables(
        organization=custodian,
        user=analyst,
        persons=_csv("persons.csv", persons_text),
        events=[_csv(name, text) for name, text in events.items()],
        person_key="patient_id",
        name="Visits",
    )
    job_execute(job_id=str(dataset.profile_job_id))
    dataset.refresh_from_db()
    return dataset, Job.objects.get(id=dataset.profile_job_id)


# --------------------------------------------------------------------------- the join


def test_the_long_view_holds_each_event_with_its_person_then_persons_without_events():
    joined, structure = long_view(
        Table("persons.csv", _frame(PERSONS)),
        [Table("visits.csv", _frame(VISITS)), Table("rx.csv", _frame(PRESCRIPTIONS))],
        "patient_id",
    )
    assert joined.columns == [
        "patient_id",
        "sex",
        "birth_year",
        "diagnosis",
        "length_of_stay",
        "drug",
    ]
    # 7 visits, 2 prescriptions; everyone has an event (4 has a prescription).
    assert joined.height == 9 and structure["persons_without_events"] == 0
    assert joined.row(0) == ("1", "F", 1970, "J45", 2, None)
    assert joined.row(7) == ("2", "M", 1980, None, None, "A10")
    assert joined.row(8) == ("4", "F", 1990, None, None, "C07")
    assert [(t["name"], t["role"], t.get("first_row"), t["rows"]) for t in structure["tables"]] == [
        ("persons.csv", "person", None, 5),
        ("visits.csv", "event", 1, 7),
        ("rx.csv", "event", 8, 2),
    ]
    assert (structure["persons"], structure["events"], structure["rows"]) == (5, 9, 9)

    alone, only_visits = long_view(
        Table("persons.csv", _frame(PERSONS)), [Table("visits.csv", _frame(VISITS))], "patient_id"
    )
    assert alone.height == 8 and only_visits["persons_without_events"] == 1
    assert alone.row(7) == ("4", "F", 1990, None, None)


def test_a_repeated_person_key_is_refused_by_rows():
    text = PERSONS + "2,M,1980\n"
    with pytest.raises(ApplicationError) as exc:
        check_tables(
            Table("persons.csv", _frame(text)), [Table("visits.csv", _frame(VISITS))], "patient_id"
        )
    assert str(exc.value) == (
        "The person table 'persons.csv' has several rows for 1 person(s) in 'patient_id' "
        "(rows 2, 6): a person table has one row per person."
    )
    assert exc.value.extra["example_rows"] == [[2, 6]]


def test_orphan_events_are_refused_naming_the_table_column_and_rows():
    visits = VISITS + "9,K35,2\n1,J45,1\n9,K35,3\n"
    with pytest.raises(ApplicationError) as exc:
        check_tables(
            Table("persons.csv", _frame(PERSONS)),
            [Table("visits.csv", _frame(visits))],
            "patient_id",
        )
    message = str(exc.value)
    assert message.startswith(
        "'visits.csv': 2 event row(s) of 1 person(s) name a person whose 'patient_id' is not "
        "in the person table 'persons.csv' (rows 8, 10)."
    )
    assert "9" not in message.replace("rows 8, 10", "")  # the key never shown
    assert exc.value.extra["orphan_events"] == 2


def test_a_person_level_column_varying_within_a_person_is_refused():
    # The visits repeat sex: person 1 is F in the person table, M on its second visit.
    visits = "patient_id,sex,diagnosis\n1,F,J45\n1,M,E11\n2,M,I10\n3,M,I10\n"
    with pytest.raises(ApplicationError) as exc:
        check_tables(
            Table("persons.csv", _frame(PERSONS)),
            [Table("visits.csv", _frame(visits))],
            "patient_id",
        )
    assert str(exc.value) == (
        "'sex' is a person-level column of the person table 'persons.csv', but 'visits.csv' "
        "gives it another value within 1 person(s) (rows 1, 2 of 'visits.csv'). Remove the "
        "column from the event table, or correct the data."
    )
    # Agreeing copies are accepted and joined once.
    same = "patient_id,sex,diagnosis\n1,F,J45\n2,M,I10\n"
    joined, _ = long_view(
        Table("persons.csv", _frame(PERSONS)), [Table("visits.csv", _frame(same))], "patient_id"
    )
    assert joined.columns == ["patient_id", "sex", "birth_year", "diagnosis"]


def test_missing_keys_and_a_missing_key_column_are_refused():
    with pytest.raises(ApplicationError, match=r"'rx.csv' has no column 'patient_id'"):
        check_tables(
            Table("persons.csv", _frame(PERSONS)),
            [Table("rx.csv", _frame("person,drug\n1,A\n"))],
            "patient_id",
        )
    with pytest.raises(
        ApplicationError,
        match=r"1 row\(s\) of 'visits.csv' have no value in the person key 'patient_id' \(row 2\)",
    ):
        check_tables(
            Table("persons.csv", _frame(PERSONS)),
            [Table("visits.csv", _frame("patient_id,diagnosis\n1,J45\n,E11\n"))],
            "patient_id",
        )


# --------------------------------------------------------------------------- upload + steps


def test_upload_joins_profiles_each_table_and_records_the_structure(custodian, analyst):
    dataset, job = _uploaded(custodian, analyst, {"visits.csv": VISITS})
    assert job.status == "succeeded", job.error
    assert dataset.status == "ready"
    assert (dataset.rows, dataset.column_count, dataset.source_format) == (8, 5, "tables")
    structure = dataset.table_structure
    assert structure["person_key"] == "patient_id"
    assert (structure["persons"], structure["events"], structure["persons_without_events"]) == (
        5,
        7,
        1,
    )
    person_table, visits = structure["tables"]
    # Each table profiled on its own: persons 5 rows, 5 distinct keys; visits 7 rows, 4 keys.
    assert person_table["profile"]["rows"] == 5
    assert visits["profile"]["rows"] == 7
    distinct = {c["name"]: c["distinct"] for c in visits["profile"]["columns"]}
    assert distinct["patient_id"] == 4 and distinct["diagnosis"] == 3
    assert dataset.sha256 == combined_digest(structure["tables"])
    assert {v.name for v in Variable.objects.filter(dataset=dataset)} == {
        "patient_id",
        "sex",
        "birth_year",
        "diagnosis",
        "length_of_stay",
    }
    event = AuditEvent.objects.get(action="dataset.ingest", object_id=str(dataset.id))
    assert event.details["files"] == ["persons.csv", "visits.csv"]
    assert (event.details["persons"], event.details["events"]) == (5, 7)


def test_a_refused_upload_fails_its_job_with_the_message(custodian, analyst):
    dataset, job = _uploaded(custodian, analyst, {"visits.csv": VISITS + "9,K35,2\n"})
    assert job.status == "failed"
    assert "'visits.csv': 1 event row(s) of 1 person(s)" in job.error
    assert dataset.status == "failed" and not dataset.parquet_path


def _assessment(custodian, analyst, dataset):
    variables = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
    roles = {
        "patient_id": "direct",
        "sex": "quasi",
        "birth_year": "quasi",
        "diagnosis": "quasi",
        "length_of_stay": "other",
    }
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(variables[n].id), r, "Chosen for the test by the analyst.")
            for n, r in roles.items()
        ],
    )
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    return assessment


def test_step2_levels_come_from_the_tables_and_step4_counts_persons(custodian, analyst, client_for):
    dataset, _ = _uploaded(custodian, analyst, {"visits.csv": VISITS})
    assessment = _assessment(custodian, analyst, dataset)
    state = persons_state(assessment)
    # Not declared yet: the warning names the key (8 rows, 5 persons).
    assert [(h["column"], h["rows"], h["distinct"]) for h in state["looks_longitudinal"]] == [
        ("patient_id", 8, 5)
    ]
    step2 = f"/o/{custodian.slug}/assessments/{assessment.id}/steps/classification/"
    assert (
        "uploaded as linked tables (persons.csv, visits.csv): 5 persons on 8 rows"
        in client_for(analyst).get(step2).content.decode()
    )
    with pytest.raises(ApplicationError, match="tables were linked by 'patient_id'"):
        assessment_set_persons(assessment=assessment, person_key="sex")
    with pytest.raises(
        ApplicationError, match="'diagnosis' comes from the event table 'visits.csv'"
    ):
        assessment_set_persons(
            assessment=assessment, person_key="patient_id", levels={"diagnosis": "person"}
        )
    assessment_set_persons(assessment=assessment, person_key="patient_id")
    assert assessment.person_levels == {
        "sex": "person",
        "birth_year": "person",
        "diagnosis": "event",
    }
    assert persons_state(assessment)["looks_longitudinal"] == []
    persons.assessment_set_power(assessment=assessment, power="1")
    risk = person_risk_result(
        assessment, quasi=["sex", "birth_year", "diagnosis"], model="public", target=None
    )
    # p = 1. Person 1 alone in (F,1970): k 1. Person 2 {I10}: 2 and 3 hold I10, k 2.
    # Person 3: {J45} only 3 in (M,1980), k 1. Person 4, no events: matched by everyone
    # of (F,1990), k 2. Person 5 {J45}: only 5, k 1. Average (1+½+1+½+1)/5 = 0.8.
    assert (risk["persons"], risk["events"]) == (5, 7)
    assert risk["persons_without_events"] == 1
    assert [(t["name"], t["rows"]) for t in risk["tables"]] == [
        ("persons.csv", 5),
        ("visits.csv", 7),
    ]
    assert risk["min_class_size"] == 1 and risk["max_risk"] == 1.0
    assert risk["average_risk"] == pytest.approx(0.8)
    assert risk["persons_at_risk"]["persons"] == 5


def test_api_uploads_tables_and_shows_each_tables_profile(client_for, custodian, analyst, reviewer):
    api = client_for(analyst)
    answer = api.post(
        "/api/v1/datasets/tables/",
        {
            "organization": custodian.slug,
            "persons": _csv("persons.csv", PERSONS),
            "events": [_csv("visits.csv", VISITS), _csv("rx.csv", PRESCRIPTIONS)],
            "person_key": "patient_id",
        },
    )
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["status"] == "converting" and body["source_format"] == "tables"
    job_execute(job_id=body["profile_job"])
    shown = api.get(f"/api/v1/datasets/{body['id']}/").json()
    assert shown["status"] == "ready" and shown["rows"] == 9
    tables = shown["tables"]
    assert (tables["person_key"], tables["persons"], tables["events"]) == ("patient_id", 5, 9)
    assert [(t["name"], t["role"], t["rows"]) for t in tables["tables"]] == [
        ("persons.csv", "person", 5),
        ("visits.csv", "event", 7),
        ("rx.csv", "event", 2),
    ]
    assert "original_path" not in str(tables) and "profile" not in tables["tables"][0]
    # Each table's profile beside the joined one's; values hidden from a reviewer.
    full = api.get(f"/api/v1/datasets/{body['id']}/profile/").json()
    assert [(t["name"], t["rows"]) for t in full["tables"]] == [
        ("persons.csv", 5),
        ("visits.csv", 7),
        ("rx.csv", 2),
    ]
    assert "top_values" in full["tables"][2]["columns"][1]
    redacted = client_for(reviewer).get(f"/api/v1/datasets/{body['id']}/profile/").json()
    assert all("top_values" not in c for t in redacted["tables"] for c in t["columns"])
    # Bad input named: no event table.
    missing = api.post(
        "/api/v1/datasets/tables/",
        {"organization": custodian.slug, "persons": _csv("p.csv", PERSONS), "person_key": "x"},
    )
    assert missing.status_code == 400 and "events" in str(missing.json())


def test_the_page_uploads_tables_and_the_data_set_page_lists_them(client_for, custodian, analyst):
    page = client_for(analyst)
    url = f"/o/{custodian.slug}/datasets/upload-tables/"
    assert page.get(url).status_code == 200
    no_key = page.post(
        url, {"persons": _csv("persons.csv", PERSONS), "events": [_csv("visits.csv", VISITS)]}
    )
    assert no_key.status_code == 400 and b'data-testid="error-person_key"' in no_key.content
    same_name = page.post(
        url,
        {
            "persons": _csv("visits.csv", PERSONS),
            "events": [_csv("visits.csv", VISITS)],
            "person_key": "patient_id",
        },
    )
    assert same_name.status_code == 400
    assert "Two tables have the same file name (visits.csv)" in same_name.content.decode()
    done = page.post(
        url,
        {
            "persons": _csv("persons.csv", PERSONS),
            "events": [_csv("visits.csv", VISITS), _csv("rx.csv", PRESCRIPTIONS)],
            "person_key": "patient_id",
            "name": "Hospital visits",
        },
    )
    assert done.status_code == 302
    dataset = Dataset.objects.get(name="Hospital visits")
    job_execute(job_id=str(dataset.profile_job_id))
    detail = page.get(done["Location"]).content.decode()
    assert 'data-testid="tables"' in detail
    assert "5 persons, 9 events" in detail
    assert "visits.csv" in detail and "event table" in detail


def test_deleting_a_refused_upload_removes_every_tables_file(
    custodian, analyst, django_capture_on_commit_callbacks
):
    dataset, job = _uploaded(custodian, analyst, {"visits.csv": VISITS + "9,K35,2\n"})
    assert job.status == "failed"
    paths = [t["path"] for t in job.params["tables"]]
    assert len(paths) == 2 and all(default_storage.exists(p) for p in paths)
    with django_capture_on_commit_callbacks(execute=True):
        dataset_delete(dataset=dataset, user=analyst)
    assert not any(default_storage.exists(p) for p in paths)
