"""A release of linked tables written again as its tables (issue 25): the person table
and each event table in Parquet and CSV, the same keyed pseudonym in every table, a
suppressed person in none, every file's digest frozen in the decision and checked on
every download (figures by hand)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile

import polars as pl
import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from apps.assessments import deidentify, persons, release_apply, release_secrets, services
from apps.assessments.hierarchies import hierarchy_set
from apps.assessments.linked_release import file_stem, split_tables
from apps.assessments.models import HierarchySpec
from apps.assessments.release_columns import columns_reviewed_set
from apps.audit.models import AuditEvent
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.engine.masking import hmac_pseudonym
from apps.reports.content import report_html
from apps.reports.summary import summary_data
from apps.reviews.decisions import review_decide
from apps.reviews.submissions import assessment_submit
from tests.assessments.conftest import LOW_ANSWERS, _run
from tests.assessments.persons_factory import persons_measured
from tests.datasets.test_table_upload import _uploaded
from tests.justify import justify_all

pytestmark = pytest.mark.django_db

API = "/api/v1"
# Five persons: 1 and 2 alike (F, 1970), 3 and 4 alike (M, 1980), 5 alone (M, 1990).
PERSONS = "patient_id,sex,birth_year\n1,F,1970\n2,F,1970\n3,M,1980\n4,M,1980\n5,M,1990\n"
# Visits: 1 and 2 {J45, E11}, 3 and 4 {I10}, 5 {J45}.
VISITS = (
    "patient_id,diagnosis,length_of_stay\n"
    "1,J45,2\n1,E11,3\n2,J45,4\n2,E11,1\n3,I10,2\n4,I10,5\n5,J45,1\n"
)
# One prescription each (the drug is no quasi-identifier).
RX = "patient_id,drug\n1,A10\n2,B01\n3,C07\n4,C08\n5,R03\n"
ROLES = {
    "patient_id": "direct",
    "sex": "quasi",
    "birth_year": "quasi",
    "diagnosis": "quasi",
    "length_of_stay": "other",
    "drug": "other",
}
TABLE_FILES = [
    "persons.parquet",
    "persons.csv",
    "visits.parquet",
    "visits.csv",
    "rx.parquet",
    "rx.csv",
]


def _applied(custodian, analyst):  # type: ignore[no-untyped-def]
    """Public, max risk 0.5 (k = 2), p = 1; one person of five may be suppressed, no
    event. At the original values (F,1970) {1,2} and (M,1980) {3,4} hold every feature
    twice; person 5 is alone in (M,1990): suppressed, all of its rows with it."""
    dataset, _ = _uploaded(custodian, analyst, {"visits.csv": VISITS, "rx.csv": RX}, PERSONS)
    variables = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(variables[n].id), r, "Chosen for the test by the analyst.")
            for n, r in ROLES.items()
        ],
    )
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    persons_measured(assessment, analyst, "1", ("sex", "birth_year", "diagnosis"))
    config = deidentify.deid_config(assessment).replace(
        suppression_limit=0.2, event_suppression_limit=0.0
    )
    deidentify.deid_config_save(assessment=assessment, config=config)
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.search_result["levels"] == {"sex": 0, "birth_year": 0, "diagnosis": 0}
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    return assessment


def _approved(assessment, analyst, reviewer):  # type: ignore[no-untyped-def]
    services.assessment_accept_utility(
        assessment=assessment, user=analyst, note="The tables keep every value but person 5."
    )
    for column in ("length_of_stay", "drug"):
        columns_reviewed_set(
            assessment=assessment, user=analyst, column=column, reason="", ground="not_knowable"
        )
    justify_all(assessment)
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Ready for review.",
        intruder_waiver="No motivated-intruder test: this is a synthetic test release.",
    )
    decision = review_decide(
        assessment=assessment, reviewer=reviewer, decision="approve", reasons="Meets 0.5."
    )
    assessment.refresh_from_db()
    assert assessment.status == "approved"
    return decision


def _listed(assessment) -> dict[str, dict]:  # type: ignore[no-untyped-def]
    return {f["name"]: f for f in assessment.apply_result["release_files"]}


def _read(path: str, fmt: str) -> pl.DataFrame:
    with default_storage.open(path, "rb") as handle:
        data = handle.read()
    return pl.read_parquet(io.BytesIO(data)) if fmt == "parquet" else pl.read_csv(data)


def _download(client, assessment, **params):  # type: ignore[no-untyped-def]
    return client.get(f"{API}/assessments/{assessment.id}/release/download/", params)


def test_the_tables_are_written_with_one_pseudonym_and_without_the_suppressed_person(
    custodian, analyst, client_for
):
    assessment = _applied(custodian, analyst)
    step7 = client_for(analyst).get(
        f"/o/{custodian.slug}/assessments/{assessment.id}/steps/deidentify/"
    )
    assert step7.content.decode().count('data-testid="release-table-file"') == 6
    result = assessment.apply_result
    lg = result["longitudinal"]
    assert lg["suppressed"]["persons"] == 1
    assert lg["suppressed"]["events_of_suppressed_persons"] == 2  # its visit and its drug
    assert (lg["persons_in"], lg["events_in"], lg["persons_out"], lg["events_out"]) == (
        5,
        12,
        4,
        10,
    )
    assert lg["risk_after"]["max_risk"] == pytest.approx(0.5)
    assert lg["risk_after"]["average_risk"] == pytest.approx(0.5)

    keys = json.loads(release_secrets.release_secrets_read(assessment=assessment))["keys"]
    key = base64.b64decode(keys["patient_id"])
    p = {i: hmac_pseudonym(i, key, 32) for i in "12345"}
    listed = _listed(assessment)
    assert list(listed) == TABLE_FILES
    facts = {n: (f["table"], f["role"], f["rows"], f["persons"]) for n, f in listed.items()}
    assert facts == {
        "persons.parquet": ("persons.csv", "person", 4, 4),
        "persons.csv": ("persons.csv", "person", 4, 4),
        "visits.parquet": ("visits.csv", "event", 6, 4),
        "visits.csv": ("visits.csv", "event", 6, 4),
        "rx.parquet": ("rx.csv", "event", 4, 4),
        "rx.csv": ("rx.csv", "event", 4, 4),
    }
    for name, entry in listed.items():
        frame = _read(entry["path"], entry["format"])
        with default_storage.open(entry["path"], "rb") as handle:
            assert hashlib.sha256(handle.read()).hexdigest() == entry["sha256"], name
        if entry["role"] == "person":
            # One row per person left, sorted by pseudonym; the person-level columns only.
            assert frame.columns == ["patient_id", "sex", "birth_year"]
            expected = sorted(
                [(p["1"], "F", 1970), (p["2"], "F", 1970), (p["3"], "M", 1980), (p["4"], "M", 1980)]
            )
            rows = [(r[0], r[1], int(r[2])) for r in frame.rows()]
            assert rows == expected, name
        elif entry["table"] == "visits.csv":
            assert frame.columns == ["patient_id", "diagnosis", "length_of_stay"]
            assert [(r[0], r[1], int(r[2])) for r in frame.rows()] == [
                (p["1"], "J45", 2),
                (p["1"], "E11", 3),
                (p["2"], "J45", 4),
                (p["2"], "E11", 1),
                (p["3"], "I10", 2),
                (p["4"], "I10", 5),
            ], name
        else:
            assert frame.columns == ["patient_id", "drug"]
            assert frame.rows() == [
                (p["1"], "A10"),
                (p["2"], "B01"),
                (p["3"], "C07"),
                (p["4"], "C08"),
            ], name
        # the same pseudonym in every table, never the raw key; person 5 in none
        column = frame.get_column("patient_id").cast(pl.String).to_list()
        assert set(column) <= {p["1"], p["2"], p["3"], p["4"]}
        assert not set(column) & set("12345")
        assert p["5"] not in column


def test_each_file_is_frozen_and_a_changed_event_table_is_refused(
    custodian, analyst, reviewer, client_for
):
    assessment = _applied(custodian, analyst)
    listed = _listed(assessment)
    client = client_for(analyst)
    # Before the approval no table leaves.
    assert _download(client, assessment, file="visits.csv").status_code == 403

    decision = _approved(assessment, analyst, reviewer)
    for name, entry in listed.items():
        assert decision.digests[f"file:{name}"] == entry["sha256"]
    assert decision.digests["release_parquet"] == assessment.apply_result["sha256"]["parquet"]

    # The review page, the report and the recipient summary list each table's files.
    review = client_for(reviewer).get(f"/o/{custodian.slug}/assessments/{assessment.id}/review/")
    page = review.content.decode()
    assert page.count('data-testid="release-table-file"') == 6
    html = report_html(assessment=assessment, decision=decision)
    assert html.count('data-testid="release-table-file"') == 6
    for entry in listed.values():
        assert entry["sha256"] in html and entry["sha256"] in page
    summary = summary_data(assessment=assessment, decision=decision)
    assert [
        (t["name"], t["table"], t["rows"], t["persons"], t["sha256"])
        for t in summary["release"]["tables"]
    ] == [(n, f["table"], f["rows"], f["persons"], f["sha256"]) for n, f in listed.items()]

    # The page's download of a table, as the overview links it.
    overview = client.get(f"/o/{custodian.slug}/assessments/{assessment.id}/").content.decode()
    assert overview.count('data-testid="download-table-file"') == 6
    url = f"/o/{custodian.slug}/assessments/{assessment.id}/release/download/parquet/"
    paged = client.get(url, {"file": "persons.parquet"})
    assert paged.status_code == 200
    assert paged["X-Content-SHA256"] == listed["persons.parquet"]["sha256"]

    ok = _download(client, assessment, file="rx.csv")
    assert ok.status_code == 200
    body = b"".join(ok.streaming_content)
    assert hashlib.sha256(body).hexdigest() == listed["rx.csv"]["sha256"]
    assert ok["X-Content-SHA256"] == listed["rx.csv"]["sha256"]
    bundle = _download(client, assessment, format="zip")
    assert bundle.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(bundle.streaming_content)))
    members = set(archive.namelist())
    assert set(TABLE_FILES) <= members and "SHA256SUMS" in members
    assert archive.read("visits.csv") == _raw(listed["visits.csv"]["path"])
    assert f"{listed['visits.csv']['sha256']}  visits.csv" in archive.read("SHA256SUMS").decode()

    # One byte of the visits' CSV changed in storage after the approval.
    path = listed["visits.csv"]["path"]
    data = bytearray(_raw(path))
    data[-2] = ord("9") if data[-2] != ord("9") else ord("8")
    default_storage.delete(path)
    default_storage.save(path, ContentFile(bytes(data)))
    refused = _download(client, assessment, file="visits.csv")
    assert refused.status_code == 409
    assert listed["visits.csv"]["sha256"] in json.dumps(refused.json())
    event = AuditEvent.objects.filter(action="download.refused").latest("sequence")
    assert event.details["format"] == "visits.csv"
    assert event.details["approved_sha256"] == listed["visits.csv"]["sha256"]
    assert event.details["stored_sha256"] == hashlib.sha256(bytes(data)).hexdigest()
    # the bundle holds it too: refused whole
    assert _download(client, assessment, format="zip").status_code == 409
    # the other files still leave
    assert _download(client, assessment, file="visits.parquet").status_code == 200
    assert _download(client, assessment, file="nothing.csv").status_code == 404


def _raw(path: str) -> bytes:
    with default_storage.open(path, "rb") as handle:
        return bytes(handle.read())


def test_a_new_release_deletes_the_tables_of_the_one_it_replaces(
    custodian, analyst, django_capture_on_commit_callbacks
):
    assessment = _applied(custodian, analyst)
    old = [f["path"] for f in assessment.apply_result["release_files"]]
    assert all(default_storage.exists(p) for p in old)
    with django_capture_on_commit_callbacks(execute=True):
        _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    new = [f["path"] for f in assessment.apply_result["release_files"]]
    assert len(new) == 6 and not set(new) & set(old)
    assert all(default_storage.exists(p) for p in new)
    assert not any(default_storage.exists(p) for p in old)


def test_split_keeps_person_level_columns_in_the_person_table_only():
    # An upload whose visits repeated sex: the long table holds it once, as a person-table
    # column; the visits table is written with its own columns only.
    structure = {
        "person_key": "pid",
        "tables": [
            {"name": "people.csv", "role": "person", "columns": ["pid", "sex"]},
            {"name": "visits.csv", "role": "event", "event_columns": ["code"]},
            {"name": "labs.csv", "role": "event", "event_columns": ["test"]},
        ],
    }
    released = pl.DataFrame(
        {
            "pid": ["b", "b", "a", "a", "c"],
            "sex": ["M", "M", "F", "F", "F"],
            "code": ["X", None, "Y", None, None],
            "test": [None, "T1", None, "T2", None],
        }
    )
    tables = pl.Series(["visits.csv", "labs.csv", "visits.csv", "labs.csv", None])
    split = {t["name"]: f for t, f in split_tables(structure, "pid", released, tables)}
    assert split["people.csv"].rows() == [("a", "F"), ("b", "M"), ("c", "F")]
    assert split["visits.csv"].columns == ["pid", "code"]
    assert split["visits.csv"].rows() == [("b", "X"), ("a", "Y")]
    assert split["labs.csv"].rows() == [("b", "T1"), ("a", "T2")]


def test_table_file_names_are_safe_and_unique():
    taken: set[str] = set()
    assert file_stem("visits.csv", taken) == "visits"
    assert file_stem("visits.parquet", taken) == "visits-2"
    assert file_stem("Lab results (2024).xlsx", taken) == "Lab_results_2024"
    assert file_stem("../..csv", taken) == "table"


# Anchored dates on linked tables: four persons alike (F, 1960), two visits each; the
# first visit (the anchor) is a person-level value the release adds to the person table.
DATED_PERSONS = "patient_id,sex,birth_year\nHN1,F,1960\nHN2,F,1960\nHN3,F,1960\nHN4,F,1960\n"
DATED_VISITS = (
    "patient_id,admission\n"
    "HN1,2020-01-10\nHN1,2020-02-15\nHN2,2020-01-12\nHN2,2020-02-20\n"
    "HN3,2020-03-05\nHN3,2020-04-25\nHN4,2020-03-07\nHN4,2020-04-02\n"
)


def test_anchored_dates_and_the_event_count_on_linked_tables(custodian, analyst):
    """The tables written again carry the anchor in the person table and the intervals in
    the event table, and measure as the long table does (dates as released, the event
    count on): the release is written, not refused as measuring differently."""
    from apps.assessments import person_dates

    dataset, _ = _uploaded(custodian, analyst, {"visits.csv": DATED_VISITS}, DATED_PERSONS)
    variables = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
    roles = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "admission": "quasi"}
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
    persons.assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    persons.assessment_set_power(assessment=assessment, user=analyst, power="1")
    services.assessment_set_threshold(
        assessment=assessment,
        profile="ontario_ipc_2016",
        answers=LOW_ANSWERS,
        mode="custom",
        custom_value=0.5,
        justification="A test release whose groups of two persons are enough by design.",
    )
    services.assessment_set_context(assessment=assessment, answers={})
    for column in ("sex", "birth_year", "admission"):
        hierarchy_set(
            assessment=assessment, column=column, kind=HierarchySpec.Kind.SUPPRESS, params={}
        )
    person_dates.assessment_set_dates(
        assessment=assessment,
        user=analyst,
        settings={
            "dates": {"columns": ["admission"], "mode": "anchored"},
            "event_count": {"enabled": True},
        },
    )
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    config = deidentify.deid_config(assessment)
    deidentify.deid_config_save(
        assessment=assessment,
        config=config.replace(
            suppression_limit=0.0, event_suppression_limit=0.0, max_levels={"admission": 2}
        ),
    )
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    # Every person has two visits (the count is shared by all); anchors by month pair
    # {HN1, HN2} and {HN3, HN4}, but HN3's 51 days and HN4's 26 days part at 30-day bins:
    # the anchor by year with 30-day bins gives counts 3, 3, 3, 4 (test_person_dates).
    levels = assessment.search_result["levels"]
    assert (levels["anchor"], levels["admission"]) == (2, 2)
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    result = assessment.apply_result
    assert result["longitudinal"]["risk_after"]["min_class_size"] == 3
    assert result["longitudinal"]["risk_after"]["average_risk"] == pytest.approx(0.3125)
    listed = _listed(assessment)
    people = _read(listed["persons.parquet"]["path"], "parquet")
    assert people.get_column("anchor").to_list() == ["2020"] * 4
    assert "admission" not in people.columns
    visits = _read(listed["visits.parquet"]["path"], "parquet")
    assert "anchor" not in visits.columns
    assert visits.get_column("admission").to_list() == [
        "0-29", "30-59", "0-29", "30-59", "0-29", "30-59", "0-29", "0-29",
    ]  # fmt: skip
    assert listed["persons.parquet"]["persons"] == 4 and listed["visits.parquet"]["rows"] == 8
