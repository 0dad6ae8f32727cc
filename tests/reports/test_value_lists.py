"""The signed report leaks nothing it does not need (issue #22): no original value of a
generalized quasi-identifier held by fewer records than the threshold's class size is in the
PDF or on the review page — not a full postal code, not a rare country, not a rare age — and
what each released value contains is listed most frequent value first.

The register is made here, with a seeded generator, and the check reads the values to hide
from the data itself: every quasi-identifier, every value, not a list of known strings."""

from __future__ import annotations

import io
import random
import re

import polars as pl
import pytest
from django.urls import reverse
from pypdf import PdfReader

from apps.assessments import deidentify, release_apply, services
from apps.assessments.hierarchies import class_threshold, hierarchy_set, value_counts
from apps.assessments.services import assessment_create
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.reports.content import report_html
from apps.reports.models import Report
from apps.reports.verification import report_pdf
from apps.reviews.models import ReviewDecision
from tests.assessments.conftest import LOW_ANSWERS, _run, uploaded_register
from tests.justify import justify_all
from tests.reports.helpers import decide, run_report_job

pytestmark = pytest.mark.django_db

CONTINENTS = {
    "North America": ["United-States", "Canada", "Mexico", "Jamaica", "Haiti", "Cuba",
                      "Honduras", "Guatemala", "Nicaragua", "El-Salvador", "Puerto-Rico",
                      "Dominican-Republic"],
    "Europe": ["Germany", "England", "Portugal", "Greece", "Holand-Netherlands", "Hungary",
               "Poland", "Yugoslavia", "Scotland", "Ireland", "France", "Italy"],
    "Asia": ["India", "Iran", "Cambodia", "Laos", "Thailand", "Vietnam", "Philippines"],
    "South America": ["Ecuador", "Peru", "Columbia"],
}  # fmt: skip
FSAS = ("K1P", "K2G", "M5V", "M4C", "L8P", "N6A", "P3E", "K7L")
LETTERS = "ABCEGHJKLMNPRSTVWXYZ"


def _register(rows: int = 900, seed: int = 2211) -> pl.DataFrame:
    rng = random.Random(seed)
    common = {"United-States": 80, "Canada": 7, "Mexico": 4, "Germany": 4, "India": 3}
    rare = [c for group in CONTINENTS.values() for c in group if c not in common]
    data: dict[str, list[str]] = {"zone": [], "origin": [], "years": [], "sex": [], "dx": []}
    for i in range(rows):
        data["zone"].append(
            f"{rng.choice(FSAS)} {rng.randint(0, 9)}{rng.choice(LETTERS)}{rng.randint(0, 9)}"
        )
        country = rare[i % len(rare)] if i < 2 * len(rare) else None
        data["origin"].append(
            country or rng.choices(list(common), weights=list(common.values()))[0]
        )
        data["years"].append(str(rng.randint(91, 97) if i % 150 == 0 else rng.randint(18, 69)))
        data["sex"].append(rng.choice("FM"))
        data["dx"].append(rng.choice(["Asthma", "Diabetes", "Hypertension", "Migraine"]))
    return pl.DataFrame(data)


def _released_and_reported(custodian, analyst, reviewer, monkeypatch):  # type: ignore[no-untyped-def]
    dataset = uploaded_register(custodian, analyst, _register())
    roles = {
        "zone": "quasi",
        "origin": "quasi",
        "years": "quasi",
        "sex": "quasi",
        "dx": "sensitive",
    }
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(v.id), roles[v.name], f"{v.name} is known to neighbours.")
            for v in Variable.objects.filter(dataset=dataset)
        ],
    )
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    hierarchy_set(assessment=assessment, column="zone", kind="prefix", params={"lengths": [3, 1]})
    hierarchy_set(
        assessment=assessment, column="origin", kind="categorical", params={"levels": [CONTINENTS]}
    )
    hierarchy_set(
        assessment=assessment, column="years", kind="interval", params={"widths": [10, 20]}
    )
    assessment.refresh_from_db()
    for start in (deidentify.assessment_start_search, release_apply.assessment_start_apply):
        _run(start(assessment=assessment, user=analyst))
        assessment.refresh_from_db()
    services.assessment_accept_utility(assessment=assessment, note="Bands suffice.")
    justify_all(assessment)
    assessment.refresh_from_db()
    decision = decide(assessment, analyst, reviewer)
    job = run_report_job(monkeypatch, decision)
    return assessment, Report.objects.get(id=job.result["report_id"])


def _alone(value: str) -> re.Pattern[str]:
    """``value`` as a whole: not inside a longer word, code or number."""
    return re.compile(rf"(?<![\w\-.]){re.escape(value)}(?![\w\-]|\.\d)")


def test_no_rare_original_value_in_the_report_and_the_most_frequent_first(
    custodian, analyst, reviewer, monkeypatch, client_for
):
    assessment, report = _released_and_reported(custodian, analyst, reviewer, monkeypatch)
    review = client_for(reviewer).get(
        reverse("assessment-review", kwargs={"org": custodian.slug, "assessment_id": assessment.id})
    )
    review_text = " ".join(re.sub(r"<[^>]+>", " ", review.content.decode()).split())
    levels = assessment.apply_result["levels"]
    generalized = [column for column, level in levels.items() if level > 0]
    assert {"zone", "origin"} <= set(generalized), levels  # else the check would be empty
    k = class_threshold(assessment)
    assert k == 10  # low invasion, Ontario IPC: threshold 0.1

    pdf = " ".join(p.extract_text() for p in PdfReader(io.BytesIO(report_pdf(report))).pages)
    pdf = " ".join(pdf.split())
    html = report_html(assessment=assessment, decision=ReviewDecision.objects.get(report=report))
    leaked, hidden = [], 0
    for column in generalized:
        counts = value_counts(assessment, column)
        rare = [value for value, n in counts.items() if n < k]
        hidden += len(rare)
        numeric = all(re.fullmatch(r"\d+", v) for v in counts)
        # Numbers collide with the report's own figures: those are checked in the column's
        # value lists (the mapping table), everything else in the whole PDF.
        texts = [pdf, review_text] if not numeric else [_mapping_cells(html, column)]
        leaked += [(column, v) for v in rare for t in texts if _alone(v).search(t)]
    assert hidden > 100  # full postal codes, rare countries and ages were there to leak
    assert leaked == []
    _most_frequent_first(assessment, html, pdf, k)
    assert "United-States (" in review_text  # the reviewer reads the same lists


def _mapping_cells(html: str, column: str) -> str:
    """The text of the cells of ``column``'s value-list table, the counts of the values not
    listed ("3 values held by fewer than 10 records each, not listed") taken out."""
    table = re.search(rf'data-testid="mapping-{column}".*?</table>', html, re.S)
    assert table, f"no value list for {column}"
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table.group(0), re.S)
    text = " | ".join(re.sub(r"<[^>]+>", " ", c) for c in cells[0::4] + cells[1::4])
    return re.sub(r"[\d,]+ values? held by fewer than [\d,]+ records( each)?, not listed", "", text)


def _most_frequent_first(assessment, html: str, pdf: str, k: int) -> None:  # type: ignore[no-untyped-def]
    """Under each released value of origin, the values listed with their records, most
    frequent first, each held by k records or more."""
    table = re.search(r'data-testid="mapping-origin".*?</table>', html, re.S)
    assert table
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td>", table.group(0), re.S)
    counts = value_counts(assessment, "origin")
    for label, contents in rows:
        listed = re.findall(r"([\w&\-]+) \(([\d,]+)\)", contents)
        shown = [int(n.replace(",", "")) for _, n in listed]
        assert shown == sorted(shown, reverse=True), (label, contents)
        assert all(counts[v] == int(n.replace(",", "")) >= k for v, n in listed), contents
    first = {re.findall(r"([\w&\-]+) \(", c)[0] for _, c in rows if re.search(r"\(\d", c)}
    assert "United-States" in first  # most of the rows, so first in its group
    assert "United-States (" in pdf


def _kept_register(rows: int = 900, seed: int = 515) -> pl.DataFrame:
    """Quasi-identifiers whose optimum keeps them as they are, each with a few values held by
    fewer than ten records (suppressed with their records, so never in the release); a
    categorical one left fully suppressed whose original distribution Step 8 charts."""
    rng = random.Random(seed)
    areas = [f"Area {chr(65 + i)}" for i in range(4)]
    data: dict[str, list[str]] = {"area": [], "gender": [], "unit": [], "years": [], "dx": []}
    for i in range(rows):
        data["area"].append(f"Zone {i % 3}-{seed}" if i < 6 else rng.choice(areas))
        data["gender"].append(f"Kind {i % 2}-{seed}" if 6 <= i < 9 else rng.choice("FM"))
        data["unit"].append(f"Unit {rng.randrange(400)}" if i < 300 else f"Ward {i % 4}")
        data["years"].append(str(rng.randint(18, 69)))
        data["dx"].append(rng.choice(["Asthma", "Diabetes", "Hypertension", "Migraine"]))
    return pl.DataFrame(data)


def test_no_rare_value_of_a_kept_or_suppressed_quasi_identifier_in_the_charts(
    custodian, analyst, reviewer, monkeypatch, client_for
):
    """Values held by fewer than k records were suppressed with their records: the per-value
    charts of Step 8, the review page and the report, which people who may not see the data
    read, show how many such values there were, never which."""
    dataset = uploaded_register(custodian, analyst, _kept_register())
    roles = {
        "area": "quasi",
        "gender": "quasi",
        "unit": "quasi",
        "years": "quasi",
        "dx": "sensitive",
    }
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(str(v.id), roles[v.name], f"{v.name} is known to neighbours.")
            for v in Variable.objects.filter(dataset=dataset)
        ],
    )
    assessment = assessment_create(organization=custodian, dataset=dataset, user=analyst)
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    _run(services.assessment_start_risk(assessment=assessment, user=analyst))
    for column in ("area", "gender", "unit"):
        hierarchy_set(assessment=assessment, column=column, kind="suppress", params={})
    hierarchy_set(
        assessment=assessment, column="years", kind="interval", params={"widths": [10, 20]}
    )
    deidentify.deid_config_set(
        assessment=assessment,
        masking={},
        suppression_limit=0.05,
        metric="loss",
        max_levels={"area": 0, "gender": 0},
    )
    assessment.refresh_from_db()
    for start in (deidentify.assessment_start_search, release_apply.assessment_start_apply):
        _run(start(assessment=assessment, user=analyst))
        assessment.refresh_from_db()
    levels = assessment.apply_result["levels"]
    assert (levels["area"], levels["gender"], levels["unit"]) == (0, 0, 1), levels
    services.assessment_accept_utility(assessment=assessment, note="Areas suffice.")
    justify_all(assessment)
    assessment.refresh_from_db()
    k = class_threshold(assessment)
    rare = {
        column: sorted(v for v, n in value_counts(assessment, column).items() if n < k)
        for column in ("area", "gender", "unit")
    }
    assert all(rare.values()) and len(rare["unit"]) > 100, rare

    def page(user, name: str, **kwargs: object) -> str:  # type: ignore[no-untyped-def]
        url = reverse(
            name, kwargs={"org": custodian.slug, "assessment_id": assessment.id, **kwargs}
        )
        return " ".join(re.sub(r"<[^>]+>", " ", client_for(user).get(url).content.decode()).split())

    step8 = page(reviewer, "assessment-step", slug="utility")
    analyst_step8 = page(analyst, "assessment-step", slug="utility")
    decision = decide(assessment, analyst, reviewer)
    job = run_report_job(monkeypatch, decision)
    report = Report.objects.get(id=job.result["report_id"])
    pdf = " ".join(
        " ".join(p.extract_text() for p in PdfReader(io.BytesIO(report_pdf(report))).pages).split()
    )
    review = page(reviewer, "assessment-review")
    leaked = [
        (where, column, value)
        for where, text in (("report", pdf), ("review page", review), ("Step 8", step8))
        for column, values in rare.items()
        for value in values
        if _alone(value).search(text)
    ]
    assert leaked == [], sorted({(where, column) for where, column, _ in leaked})
    # What was hidden is counted, in words, where the chart stood.
    for text in (pdf, review, step8):
        assert f"held by fewer than {k} records" in text
    # The analyst, who may read the data, still sees every value.
    assert all(_alone(v).search(analyst_step8) for v in rare["area"] + rare["gender"])
