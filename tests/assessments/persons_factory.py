"""The person-keyed (longitudinal) data sets and set-ups the person tests share (issue 25):
a CSV uploaded with its columns' roles, an assessment made of it, Steps 1–6 run on it with
the person key and the adversary's power (``prepared``: k = 2 by a custom threshold, sex
and birth year kept or suppressed), an event column kept or suppressed with the date and
event-count settings (``persons_ready``, ``with_dates``), then searched and applied. The
data sets are LONGITUDINAL.md §5's cases (TC1, TC4) and the ones built for suppression,
intervals and dates; each test works its figures out by hand from them."""

from __future__ import annotations

import polars as pl
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.assessments import deidentify, person_dates, release_apply, services
from apps.assessments.hierarchies import hierarchy_set
from apps.assessments.models import Assessment, HierarchySpec
from apps.assessments.persons import assessment_set_persons, assessment_set_power
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.datasets.storage import local_path
from tests.assessments.conftest import LOW_ANSWERS, _run
from tests.conftest import read_now

# TC1: one woman born 1970 with three rows, two men born 1980 with one and two rows. The
# person ids are health-number-like text that must never appear in a message.
TC1 = (
    "patient_id,sex,birth_year,length_of_stay\n"
    "HN4471,F,1970,2\n"
    "HN5502,M,1980,5\n"
    "HN4471,F,1970,1\n"
    "HN6613,M,1980,3\n"
    "HN4471,F,1970,7\n"
    "HN6613,M,1980,4\n"
)


# TC4 at level 0 (the full codes): P1 {I21.0, E11.9}, P2 {I21.4, E11.6}, P3 {I25.1, E11.9},
# P4 {I25.1, E11.6}.
TC4 = "patient_id,sex,birth_year,diagnosis\n" + "".join(
    f"{pid},M,1950,{code}\n"
    for pid, codes in (
        ("HN1", ("I21.0", "E11.9")),
        ("HN2", ("I21.4", "E11.6")),
        ("HN3", ("I25.1", "E11.9")),
        ("HN4", ("I25.1", "E11.6")),
    )
    for code in codes
)


def upload(custodian, analyst, text: str, roles: dict[str, str]):  # type: ignore[no-untyped-def]
    """The CSV uploaded and profiled, each column given the role named (a reason typed)."""
    from apps.datasets.services import dataset_upload

    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("visits.csv", text.encode()),
        )
    )
    variables = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(variables[name].id), role, "Chosen for the test by the analyst.")
            for name, role in roles.items()
        ],
    )
    return dataset


def assessment_of(custodian, analyst, dataset) -> Assessment:  # type: ignore[no-untyped-def]
    assessment = services.assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    return assessment


def measured(assessment: Assessment, analyst) -> dict:  # type: ignore[no-untyped-def,type-arg]
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.risk_result is not None
    return assessment.risk_result


TC1_ROLES = {
    "patient_id": "direct",
    "sex": "quasi",
    "birth_year": "quasi",
    "length_of_stay": "other",
}


def page(assessment, slug: str) -> str:  # type: ignore[no-untyped-def]
    from django.urls import reverse

    return reverse(
        "assessment-step",
        kwargs={"org": assessment.organization.slug, "assessment_id": assessment.id, "slug": slug},
    )


ROLES = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi"}


# Persons P1…P10 hold code A twice each (a repeated event), P11…P19 code B once, P20 codes
# A and Z: 31 events, 20 persons, all (F, 1970). Event limit 5 % → 1 event; person
# limit 5 % → 1 person. At p = 1 and k = 2 only P20 fails (Z is held by P20 alone).
SUPPRESSION = "patient_id,sex,birth_year,code\n" + "".join(
    f"HN{i:03d},F,1970,{code}\n"
    for i, codes in [
        *((i, "AA") for i in range(1, 11)),
        *((i, "B") for i in range(11, 20)),
        (20, "AZ"),
    ]
    for code in codes
)


# TC4's test hierarchy: the full code, its 3-character category, its block, then *.
TC4_ARX = "\n".join(
    f"{code};{code[:3]};{block};*"
    for code, block in (
        ("I21.0", "I20-I25"),
        ("I21.4", "I20-I25"),
        ("I25.1", "I20-I25"),
        ("E11.9", "E08-E13"),
        ("E11.6", "E08-E13"),
    )
)


def prepared(custodian, analyst, text: str, event: str, power: str) -> Assessment:  # type: ignore[no-untyped-def]
    """Steps 1–6 on ``text``: a public release whose target is max risk 0.5 (k = 2, a
    custom threshold with context risk 1), person-level sex and birth year kept or
    suppressed, ``event`` event-level, the power given."""
    assessment = assessment_of(
        custodian, analyst, upload(custodian, analyst, text, {**ROLES, event: "quasi"})
    )
    persons_measured(assessment, analyst, power, ("sex", "birth_year"))
    assessment.refresh_from_db()
    return assessment


def persons_measured(
    assessment: Assessment, analyst, power: str, suppressed: tuple[str, ...]
) -> None:  # type: ignore[no-untyped-def]
    """Steps 3–6 of a person-keyed assessment (key ``patient_id``, the power given): the
    target max risk 0.5 (k = 2, a custom threshold with context risk 1), data risk
    measured, the ``suppressed`` columns on a suppression hierarchy."""
    assessment_set_persons(assessment=assessment, user=analyst, person_key="patient_id")
    assessment_set_power(assessment=assessment, user=analyst, power=power)
    services.assessment_set_threshold(
        assessment=assessment,
        profile="ontario_ipc_2016",
        answers=LOW_ANSWERS,
        mode="custom",
        custom_value=0.5,
        justification="A test release whose groups of two persons are enough by design.",
    )
    services.assessment_set_context(assessment=assessment, answers={})
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    for column in suppressed:
        hierarchy_set(
            assessment=assessment, column=column, kind=HierarchySpec.Kind.SUPPRESS, params={}
        )


def tc4_ready(custodian, analyst) -> Assessment:  # type: ignore[no-untyped-def]
    """``prepared`` on TC4 at p = 2, the diagnosis on TC4's test hierarchy (``TC4_ARX``:
    the full code, its 3-character category, its block, then *). Ready to search."""
    assessment = prepared(custodian, analyst, TC4, "diagnosis", "2")
    hierarchy_set(
        assessment=assessment,
        column="diagnosis",
        kind=HierarchySpec.Kind.ARX,
        params={},
        arx_text=TC4_ARX,
    )
    return assessment


def searched(assessment: Assessment, analyst) -> dict:  # type: ignore[no-untyped-def,type-arg]
    _run(deidentify.assessment_start_search(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    assert assessment.search_result is not None
    return assessment.search_result


def applied(assessment: Assessment, analyst) -> tuple[dict, pl.DataFrame]:  # type: ignore[no-untyped-def,type-arg]
    _run(release_apply.assessment_start_apply(assessment=assessment, user=analyst))
    assessment.refresh_from_db()
    with local_path(assessment.output_parquet_path) as path:
        released = pl.read_parquet(path)
    return assessment.apply_result, released


def visits(rows: dict[str, tuple[str, ...]]) -> str:
    return "patient_id,sex,birth_year,admission\n" + "".join(
        f"{pid},F,1960,{day}\n" for pid, days in rows.items() for day in days
    )


# Four persons, two visits each. Absolute: every day is unique; by month P1, P2 hold
# {01, 02} and P3, P4 {03, 04}. Anchored: anchors 01-10, 01-12, 03-05, 03-07; intervals
# P1 36, P2 39, P3 51, P4 26 days.
SEARCH = visits(
    {
        "HN1": ("2020-01-10", "2020-02-15"),
        "HN2": ("2020-01-12", "2020-02-20"),
        "HN3": ("2020-03-05", "2020-04-25"),
        "HN4": ("2020-03-07", "2020-04-02"),
    }
)


def persons_ready(  # type: ignore[no-untyped-def]
    custodian,
    analyst,
    text: str,
    event: str,
    power: str,
    settings: dict | None = None,  # type: ignore[type-arg]
    *,
    measure: bool = False,
) -> Assessment:
    """``prepared`` with the event column ``event`` kept or suppressed and, when given,
    the date and event-count ``settings`` of Step 2 (``person_dates.assessment_set_dates``);
    with ``measure``, Step 4 run again on them. Ready to search."""
    assessment = prepared(custodian, analyst, text, event, power)
    hierarchy_set(assessment=assessment, column=event, kind=HierarchySpec.Kind.SUPPRESS, params={})
    if settings is not None:
        person_dates.assessment_set_dates(assessment=assessment, user=analyst, settings=settings)
    if measure:
        _run(services.assessment_start_risk(assessment=assessment, user=analyst))
        assessment.refresh_from_db()
    return assessment


def with_dates(custodian, analyst, text: str, dates: dict, count: dict | None = None) -> Assessment:  # type: ignore[no-untyped-def,type-arg]
    """Visits (``visits``) at p = 1, their dates as ``dates`` says and the number of events
    as ``count`` says (not counted by default), measured again in Step 4."""
    settings = {"dates": dates, "event_count": count or {"enabled": False}}
    return persons_ready(custodian, analyst, text, "admission", "1", settings, measure=True)


# Six persons, 2020 (mid-year: ±30 days never leave it). Intervals from the first date:
# HN1, HN2 {0, 30}; HN3, HN4 {0, 14}; HN5, HN6 {0, 14, 30}.
INTERVALS = "patient_id,sex,birth_year,admission\n" + "".join(
    f"HN{i},F,1960,{day}\n"
    for i, days in enumerate(
        (
            ("2020-06-01", "2020-07-01"),
            ("2020-06-10", "2020-07-10"),
            ("2020-06-05", "2020-06-19"),
            ("2020-06-20", "2020-07-04"),
            ("2020-06-03", "2020-06-17", "2020-07-03"),
            ("2020-06-15", "2020-06-29", "2020-07-15"),
        ),
        start=1,
    )
    for day in days
)
