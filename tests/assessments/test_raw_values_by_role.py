"""Issue 23, item 4: reviewers get no raw value of a direct identifier, a free-text column or a
rare quasi-identifier value through the API. ``GET /api/v1/assessments/{id}/``, ``…/apply/`` and ``…/record/`` returned
Step 8's distributions — the 20 most frequent values of every column, e-mails, full names and
notes among them — although the pages hide them from reviewers.

The test is general: it walks every URL of the URL configuration under ``/api/`` that
answers GET (and every page of every list) as a reviewer, with the ids of everything the
organization holds, and looks for every original value of the register's direct identifiers
and free-text column, and every rare value of its quasi-identifiers that the release does not
hold (a town of one or two people: the hierarchies' ARX text listed them all), in every text
of every JSON answer. An analyst, who may read raw values, walks the same way and
does find them — so the walk reaches the places they would be."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from typing import Any

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.assessments import deidentify, release_apply, services
from apps.assessments.services import assessment_create
from apps.classification.models import Variable
from apps.classification.services import variables_accept_suggestions
from tests.assessments.conftest import LOW_ANSWERS, _run
from tests.conftest import read_now
from tests.justify import justify_all

pytestmark = pytest.mark.django_db

FIRST = ["Maria", "Jean", "Amir", "Olga", "Chen", "Fatima", "Liam", "Noor", "Kenji", "Ada"]
LAST = ["Tremblay", "Gagnon", "Okafor", "Novak", "Singh", "Haddad", "Moreau", "Lindqvist"]
DIAGNOSES = ["J45 Asthma", "E11 Diabetes", "I10 Hypertension"]
CITIES = ["Toronto", "Hamilton", "Mississauga", "Brampton"]
# Towns where one or two of the register's people live: rare quasi-identifier values.
RARE_TOWNS = ["Kapuskasing", "Attawapiskat", "Moosonee-Bay", "Wawa-on-Lake", "Pikangikum",
              "Sachigo Lake", "Wunnumin Lake", "Fort Severn"]  # fmt: skip


def register(n: int = 300, seed: int = 23) -> pl.DataFrame:
    """People with direct identifiers (e-mail, full name, phone) and a free-text note that
    names them, beside age, sex and diagnosis."""
    rng = random.Random(seed)
    rows: dict[str, list[str]] = {
        k: [] for k in ("email", "full_name", "phone", "age", "sex", "city", "diagnosis", "notes")
    }
    for i in range(n):
        first, last = rng.choice(FIRST), rng.choice(LAST)
        rows["email"].append(f"{first.lower()}.{last.lower()}{i}@mail-{i % 7}.ca")
        rows["full_name"].append(f"{first} {last}-{i:03d}")
        rows["phone"].append(f"416-{rng.randrange(200, 999)}-{i:04d}")
        rows["age"].append(str(rng.randrange(20, 80)))
        rows["sex"].append(rng.choice("FM"))
        rare = i % 25 == 0 and i // 25 < 2 * len(RARE_TOWNS)  # 12 rows, each town once or twice
        rows["city"].append(RARE_TOWNS[(i // 25) % len(RARE_TOWNS)] if rare else rng.choice(CITIES))
        rows["diagnosis"].append(rng.choice(DIAGNOSES))
        rows["notes"].append(
            f"Patient {first} {last} (file {i:04d}) called on 2024-0{rng.randrange(1, 9)}-1{i % 10} "
            f"about a refill; follow-up booked with Dr. {rng.choice(LAST)} in {rng.randrange(2, 9)} weeks."
        )
    return pl.DataFrame(rows)


@pytest.fixture
def submitted(custodian, analyst, reviewer):  # type: ignore[no-untyped-def]
    """The register through Steps 1-8 (e-mail and full name pseudonymized, phone
    removed, notes scrubbed) and submitted for review."""
    from apps.datasets.services import dataset_upload
    from apps.reviews.submissions import assessment_submit

    frame = register()
    dataset = read_now(
        dataset_upload(
            organization=custodian,
            user=analyst,
            upload=SimpleUploadedFile("register.csv", frame.write_csv().encode()),
        )
    )
    variables_accept_suggestions(dataset=dataset, user=analyst)
    roles = dict(Variable.objects.filter(dataset=dataset).values_list("name", "role"))
    types = dict(Variable.objects.filter(dataset=dataset).values_list("name", "inferred_type"))
    assert roles["email"] == roles["full_name"] == roles["phone"] == "direct", roles
    assert types["notes"] == "free_text", types
    assert roles["city"] == roles["age"] == "quasi", roles
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(
        assessment=assessment,
        release_model="public",
        pseudonym_linkers="The custodian's data office only",
        pseudonym_key_kept="The custodian's key vault, apart from the release",
    )
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    masking = {"email": {"method": "hmac"}, "full_name": {"method": "random"}}
    if roles["notes"] == "direct":
        masking["notes"] = {"method": "scrub"}
    deidentify.deid_config_set(
        assessment=assessment,
        masking=masking,
        suppression_limit=0.1,
        metric="loss",
        max_levels={},
    )
    for start in (
        services.assessment_start_risk,
        deidentify.assessment_start_search,
        release_apply.assessment_start_apply,
    ):
        _run(start(assessment=assessment, user=analyst))
        assessment.refresh_from_db()
    from apps.assessments.freetext import identifier_findings, identifiers_reviewed_set

    for finding in identifier_findings(assessment.apply_result, assessment.deid):
        identifiers_reviewed_set(
            assessment=assessment,
            user=analyst,
            column=finding["column"],
            reason="The placeholders replaced every name; the rest is about refills only.",
        )
    assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Fit for the study.")
    justify_all(assessment)
    assessment.refresh_from_db()
    assessment_submit(
        assessment=assessment,
        user=analyst,
        note="Ready",
        intruder_waiver="Open-data release of counts already published; the custodian waived the test.",
    )
    assessment.refresh_from_db()
    return assessment, frame


def protected_values(frame: pl.DataFrame, assessment: Any = None) -> set[str]:
    """Every original value of the direct identifiers and the free-text column, and the
    quasi-identifiers' values held by fewer than 3 people that the release does not hold
    (long enough not to occur by chance in other text)."""
    values: set[str] = set()
    for column in ("email", "full_name", "phone", "notes"):
        values |= {v for v in frame.get_column(column).to_list() if v and len(v) >= 8}
    if assessment is not None:
        from apps.datasets.storage import local_path

        with local_path(assessment.output_parquet_path) as path:
            released = pl.read_parquet(path)
        quasi = Variable.objects.filter(dataset=assessment.dataset, role="quasi")
        for column in quasi.values_list("name", flat=True):
            counts = frame.get_column(column).cast(pl.String).value_counts()
            rare = {v for v, n in counts.rows() if v and n < 3 and len(v) >= 8}
            out = set(released.get_column(column).cast(pl.String).drop_nulls().to_list())
            values |= rare - out
    return values


def _url_conf_get_paths() -> list[str]:
    """Every path under ``/api/`` in the URL configuration that answers GET, its
    parameters written ``{name}`` (format suffixes left out: the same views)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    def walk(patterns: Any, prefix: str) -> Iterator[tuple[str, URLPattern]]:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, route)
            else:
                yield route, pattern

    paths = set()
    for route, pattern in walk(get_resolver().url_patterns, "/"):
        if not route.startswith("/api/") or "format" in route:
            continue
        actions = getattr(pattern.callback, "actions", None)
        cls = getattr(pattern.callback, "cls", None) or getattr(
            pattern.callback, "view_class", None
        )
        if actions is not None and "get" not in actions:
            continue
        if actions is None and cls is not None and not hasattr(cls, "get"):
            continue
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>", r"{\1\2}", route)
        paths.add(path.replace("^", "").replace("$", "").replace("\\", ""))
    return sorted(paths)


def _ids(assessment: Any) -> dict[str, list[str]]:
    from apps.audit.models import AuditEvent
    from apps.jobs.models import Job
    from apps.reports.models import Report

    organization = assessment.organization
    return {
        "assessments": [str(assessment.id)],
        "datasets": [str(assessment.dataset_id)],
        "classification": [str(assessment.dataset_id)],
        "variables": [
            str(v)
            for v in Variable.objects.filter(dataset=assessment.dataset).values_list(
                "id", flat=True
            )
        ],
        "jobs": [
            str(j)
            for j in Job.objects.filter(organization=organization).values_list("id", flat=True)
        ],
        "audit": [
            str(e)
            for e in AuditEvent.objects.filter(organization=organization).values_list(
                "id", flat=True
            )
        ],
        "reports": [
            str(r)
            for r in Report.objects.filter(organization=organization).values_list("id", flat=True)
        ],
        "organizations": [organization.slug],
        "column": ["age", "sex", "city", "email", "full_name", "notes"],
    }


def _urls(assessment: Any) -> Iterator[str]:
    ids = _ids(assessment)
    org = assessment.organization.slug
    for path in _url_conf_get_paths():
        kind = path.split("/")[3] if path.startswith("/api/v1/") else ""  # /api/v1/<kind>/...
        params = re.findall(r"{(\w+)}", path)
        choices: list[dict[str, str]] = [{}]
        for name in params:
            pool = (
                ids["column"]
                if name == "column"
                else ids["organizations"]
                if name in ("slug", "org")
                else ids.get(kind, [])
            )
            choices = [{**c, name: value} for c in choices for value in pool]
        for chosen in choices:
            url = path
            for name, value in chosen.items():
                url = url.replace("{" + name + "}", value)
            yield url
            if not params:
                yield f"{url}?organization={org}"


def _texts(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every text in a JSON answer (keys too), with where it is."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield f"{path}.{key}", str(key)
            yield from _texts(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from _texts(inner, f"{path}[{i}]")


def walk(client: Client, assessment: Any) -> tuple[dict[str, Any], int]:
    """Every JSON answer of every GET (following list pages), by URL; and how many."""
    answers: dict[str, Any] = {}
    queue = list(_urls(assessment))
    while queue:
        url = queue.pop()
        if url in answers:
            continue
        response = client.get(url)
        if "json" not in response.get("Content-Type", ""):
            continue
        body = response.json() if response.content else None
        answers[url] = body
        if isinstance(body, dict) and isinstance(body.get("next"), str):
            queue.append(body["next"].replace("http://testserver", ""))
    return answers, sum(1 for a in answers.values() if a is not None)


def leaks(answers: dict[str, Any], values: set[str]) -> dict[str, list[str]]:
    """URL → where in its answer a protected value was found (the first few)."""
    found: dict[str, list[str]] = {}
    for url, body in answers.items():
        hits = sorted(
            {
                re.sub(r"\[\d+\]", "[]", where)
                for where, text in _texts(body)
                for v in values
                if v in text
            }
        )
        if hits:
            found[url] = hits[:6]
    return found


def test_a_reviewer_reads_no_raw_value_anywhere_in_the_api(
    submitted, client_for, reviewer, analyst
):
    assessment, frame = submitted
    values = protected_values(frame, assessment)
    assert len(values) > 900
    assert set(RARE_TOWNS) <= values  # none is in the release: each is its own class

    answers, answered = walk(client_for(reviewer), assessment)
    assert answered > 40, answered  # the walk reached the assessment's, jobs', audit's…
    record = answers[f"/api/v1/assessments/{assessment.id}/record/"]
    assert {h["column"] for h in record["hierarchies"]} >= {"age", "city"}
    assert all("arx_csv" not in h for h in record["hierarchies"]), record["hierarchies"]
    assert leaks(answers, values) == {}

    # The analyst may read raw values, and the same walk finds them: the places are real.
    analyst_leaks = leaks(walk(client_for(analyst), assessment)[0], values)
    assert any(url.endswith("/apply/") for url in analyst_leaks), analyst_leaks
    assert any(url.endswith("/record/") for url in analyst_leaks), analyst_leaks
    analyst_record = client_for(analyst).get(f"/api/v1/assessments/{assessment.id}/record/")
    city = next(h for h in analyst_record.json()["hierarchies"] if h["column"] == "city")
    assert all(town in city["arx_csv"] for town in RARE_TOWNS)

    # Once decided: the decision, its figures, the frozen record — still nothing.
    from apps.reviews.decisions import review_decide

    review_decide(assessment=assessment, reviewer=reviewer, decision="approve", reasons="Fine.")
    assessment.refresh_from_db()
    answers, _ = walk(client_for(reviewer), assessment)
    assert f"/api/v1/assessments/{assessment.id}/decisions/" in answers
    assert leaks(answers, values) == {}


def test_a_reviewer_reads_no_raw_value_on_the_assessment_pages(submitted, client_for, reviewer):
    """The pages a reviewer opens: the assessment, each step, the review."""
    from django.urls import reverse

    from apps.assessments.steps import STEPS

    assessment, frame = submitted
    values = protected_values(frame)
    kwargs = {"org": assessment.organization.slug, "assessment_id": assessment.id}
    urls = [
        reverse("assessment-detail", kwargs=kwargs),
        reverse("assessment-review", kwargs=kwargs),
        *(reverse("assessment-step", kwargs={**kwargs, "slug": s.slug}) for s in STEPS),
    ]
    client = client_for(reviewer)
    found = {}
    for url in urls:
        response = client.get(url)
        if response.status_code != 200:
            continue
        text = response.content.decode()
        hits = sorted(v for v in values if v in text or v.replace("'", "&#x27;") in text)
        if hits:
            found[url] = hits[:3]
    assert found == {}


def test_reviewer_answers_keep_the_figures_without_the_values(
    submitted, client_for, reviewer, analyst
):
    """Counts and shapes stay; only the values of protected columns are withheld, and the
    answer says so."""
    assessment, _frame = submitted
    url = f"/api/v1/assessments/{assessment.id}/apply/"
    mine = client_for(reviewer).get(url).json()["result"]
    theirs = client_for(analyst).get(url).json()["result"]
    by_column = {d["column"]: d for d in mine["variable_distributions"]}
    full = {d["column"]: d for d in theirs["variable_distributions"]}
    assert set(by_column) == set(full)
    for column in ("email", "full_name", "phone", "notes"):
        if column not in by_column:
            continue
        assert by_column[column]["labels"] == []
        assert by_column[column]["values_withheld"] is True
        assert by_column[column]["rows_before"] == full[column]["rows_before"]
    assert by_column["diagnosis"]["labels"] == full["diagnosis"]["labels"]  # not protected
    assert mine["rows_out"] == theirs["rows_out"]
    assert json.dumps(mine["risk_after"]) == json.dumps(theirs["risk_after"])
