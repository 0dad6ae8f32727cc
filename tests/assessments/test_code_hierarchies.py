"""Step 7's built-in diagnosis-code hierarchies (issue 25, LONGITUDINAL.md §2.8): ICD-10 and
ICD-9-CM built from the engine's code tables over a column's values, through the services,
the page and the API, on one table and on persons with events.

Every level below is read by hand from the WHO ICD-10 tabular list (I21 acute myocardial
infarction lies in block I20-I25, ischaemic heart diseases, of chapter IX, I00-I99; E11 in
E10-E14, diabetes mellitus, of chapter IV, E00-E90) and the ICD-9-CM one (250 diabetes
mellitus in section 249-259 of chapter 3, 240-279)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from apps.assessments import services
from apps.assessments.hierarchies import hierarchies_proposed, hierarchy_set
from apps.assessments.hierarchy_builders import build_hierarchy
from apps.assessments.hierarchy_codes import looks_like_icd10
from apps.assessments.models import HierarchySpec
from apps.assessments.solution_words import level_in_words
from apps.core.errors import ApplicationError
from tests.assessments.conftest import LOW_ANSWERS
from tests.assessments.persons_factory import (
    TC4,
    applied,
    assessment_of,
    prepared,
    searched,
    upload,
)
from tests.assessments.test_api import API, put

Kind = HierarchySpec.Kind

ROWS_ICD10 = {
    "E11.9": ["E11", "E10-E14", "E00-E90", "*"],
    "I21.0": ["I21", "I20-I25", "I00-I99", "*"],
    "I21.4": ["I21", "I20-I25", "I00-I99", "*"],
    "I25.1": ["I25", "I20-I25", "I00-I99", "*"],
}
ICD10_NAMES = ["original code", "3-character category", "block", "chapter", "suppressed (*)"]


def rows(text: str) -> dict[str, list[str]]:
    return {line.split(";")[0]: line.split(";")[1:] for line in text.strip().splitlines()}


# --------------------------------------------------------------------------- builder


def test_icd10_levels_code_category_block_chapter_top():
    hierarchy = build_hierarchy(
        "diagnosis", Kind.ICD10, {}, ["I21.0", "I21.4", "I25.1", "E11.9", None]
    )
    assert {row[0]: list(row[1:]) for row in hierarchy.rows} == ROWS_ICD10
    assert hierarchy.height == 4


def test_icd9cm_levels_code_4_digits_category_section_chapter_top():
    hierarchy = build_hierarchy("dx", Kind.ICD9CM, {}, ["250.01", "V01.71"])
    assert {row[0]: list(row[1:]) for row in hierarchy.rows} == {
        "250.01": ["250.0", "250", "249-259", "240-279", "*"],
        "V01.71": ["V01.7", "V01", "V01-V06", "V01-V91", "*"],
    }


def test_a_value_that_is_not_a_code_is_refused_naming_the_column_and_values():
    values = ["I21.0", "XYZ", "12", "heart", "I21.4"]
    with pytest.raises(ApplicationError) as refused:
        build_hierarchy("diagnosis", Kind.ICD10, {}, values)
    message = refused.value.message
    assert message.startswith("Hierarchy of 'diagnosis': 3 value(s) are not ICD-10 codes:")
    assert "'XYZ', '12', 'heart'" in message and "I21" not in message
    assert refused.value.extra["values"] == ["XYZ", "12", "heart"]


def test_only_a_few_offending_values_are_named():
    values = [f"Q{i}" for i in range(8)]  # a letter and one digit: no ICD-10 category
    with pytest.raises(ApplicationError) as refused:
        build_hierarchy("diagnosis", Kind.ICD10, {}, values)
    assert "'Q0', 'Q1', 'Q2', 'Q3', 'Q4' and 3 more" in refused.value.message


def test_a_code_in_no_block_or_chapter_is_refused():
    # D49 is written as an ICD-10 code but lies between chapter II (C00-D48) and III (D50-D89).
    with pytest.raises(ApplicationError) as refused:
        build_hierarchy("diagnosis", Kind.ICD10, {}, ["D49.1", "I21.0"])
    message = refused.value.message
    assert "1 value(s) are written as ICD-10 codes but lie in no ICD-10 block or chapter" in message
    assert "'D49.1'" in message


def test_lenient_generalizes_values_outside_the_classification():
    hierarchy = build_hierarchy(
        "diagnosis", Kind.ICD10, {"lenient": True}, ["I21.0", "A10", "D49.1", "XYZ"]
    )
    assert {row[0]: list(row[1:]) for row in hierarchy.rows} == {
        "I21.0": ["I21", "I20-I25", "I00-I99", "*"],
        "A10": ["A10", "A00-B99", "A00-B99", "*"],  # in chapter I, in no block
        "D49.1": ["D49", "*", "*", "*"],  # in no chapter
        "XYZ": ["*", "*", "*", "*"],  # not a code
    }


def test_the_original_code_is_said_as_kept():
    assert level_in_words("original code") == "kept as is"
    assert level_in_words("3-character category") == "3-character category"


def test_lenient_must_be_true_or_false():
    with pytest.raises(ApplicationError, match="lenient must be true or false"):
        build_hierarchy("diagnosis", Kind.ICD10, {"lenient": "yes"}, ["I21.0"])


def test_icd10_look():
    assert looks_like_icd10(["I21.0", "I21.4", "I25.1", "E11.9", None])
    assert looks_like_icd10(["I210", "E119", "Z00", "C50.912", "unknown"])  # 4 of 5
    assert not looks_like_icd10(["K1A", "H2X", "M5V"])  # postal prefixes, not categories
    assert not looks_like_icd10(["12", "40", "250.01"])
    assert not looks_like_icd10(["I21.0", "F", "M", "X", "Y"])


# --------------------------------------------------------------------------- one table

ONE_TABLE = {"patient_id": "direct", "sex": "quasi", "birth_year": "quasi", "diagnosis": "quasi"}


@pytest.fixture
def single(custodian, analyst):
    assessment = assessment_of(custodian, analyst, upload(custodian, analyst, TC4, ONE_TABLE))
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


def test_the_kind_is_suggested_for_icd10_values(single):
    proposed = hierarchies_proposed(assessment=single)["diagnosis"]
    assert (proposed.kind, proposed.params) == (Kind.ICD10, {})
    assert proposed.level_labels == ICD10_NAMES
    assert rows(proposed.arx_csv)["I21.0"] == ROWS_ICD10["I21.0"]
    assert hierarchies_proposed(assessment=single)["sex"].kind != Kind.ICD10


def test_the_page_sets_the_icd10_kind_and_names_every_level(client_for, analyst, single):
    client = client_for(analyst)
    url = reverse(
        "assessment-step",
        kwargs={"org": single.organization.slug, "assessment_id": single.id, "slug": "deidentify"},
    )
    page = client.get(url).content.decode()
    assert 'value="icd10"' in page and "ICD-9-CM codes" in page and "§2.8" in page
    response = client.post(url, {"action": "hierarchy", "column": "diagnosis", "kind": "icd10"})
    assert response.status_code == 302
    spec = HierarchySpec.objects.get(assessment=single, column="diagnosis")
    assert (spec.kind, spec.params, spec.height) == (Kind.ICD10, {"lenient": False}, 4)
    assert spec.level_labels == ICD10_NAMES
    assert rows(spec.arx_csv)["E11.9"] == ["E11", "E10-E14", "E00-E90", "*"]
    assert rows(spec.arx_csv)["E11.6"] == ["E11", "E10-E14", "E00-E90", "*"]
    page = client.get(url).content.decode()
    assert "3-character category → block → chapter → suppressed (*)" in page

    # The same values are not ICD-9-CM codes: refused, naming them, the ICD-10 spec kept.
    response = client.post(url, {"action": "hierarchy", "column": "diagnosis", "kind": "icd9cm"})
    page = client.get(response["Location"]).content.decode()
    assert "Hierarchy of &#x27;diagnosis&#x27;: 5 value(s) are not ICD-9-CM codes" in page
    assert "&#x27;E11.6&#x27;" in page
    assert HierarchySpec.objects.get(assessment=single, column="diagnosis").kind == Kind.ICD10

    # Ticked, the lenient variant releases them as * above the code, and the page says so.
    client.post(
        url,
        {"action": "hierarchy", "column": "diagnosis", "kind": "icd9cm", "lenient_icd9cm": "on"},
    )
    spec = HierarchySpec.objects.get(assessment=single, column="diagnosis")
    assert (spec.kind, spec.params) == (Kind.ICD9CM, {"lenient": True})
    assert rows(spec.arx_csv)["I21.0"] == ["*"] * 5
    assert 'data-testid="lenient-diagnosis"' in client.get(url).content.decode()


def test_the_api_sets_the_kind_and_refuses_a_value_outside_it(client_for, analyst, single):
    client = client_for(analyst)
    path = f"{API}{single.id}/hierarchies/diagnosis/"
    response = put(client, path, {"kind": "icd10"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["kind"], body["height"], body["level_labels"]) == ("icd10", 4, ICD10_NAMES)
    assert [level["groups"] for level in body["preview"]] == [5, 3, 2, 2, 1]

    response = put(client, path, {"kind": "icd9cm"})
    assert response.status_code == 400
    assert response.json()["message"].startswith(
        "Hierarchy of 'diagnosis': 5 value(s) are not ICD-9-CM codes:"
    )
    assert response.json()["extra"]["column"] == "diagnosis"
    assert put(client, path, {"kind": "icd10", "params": {"lenient": 1}}).status_code == 400
    assert HierarchySpec.objects.get(assessment=single, column="diagnosis").kind == Kind.ICD10


# --------------------------------------------------------------------------- persons


def test_tc4_search_with_the_built_in_icd10_hierarchy(custodian, analyst):
    assessment = prepared(custodian, analyst, TC4, "diagnosis", "2")
    hierarchy_set(assessment=assessment, column="diagnosis", kind=Kind.ICD10, params={})
    search = searched(assessment, analyst)
    # TC4, p = 2, target 0.5: every pair of codes is unique at level 0; at level 1 (the
    # 3-character category) P1, P2 hold {I21, E11} and P3, P4 {I25, E11}: counts of 2.
    assert search["unit"] == "person"
    assert search["levels"] == {"sex": 0, "birth_year": 0, "diagnosis": 1}
    assert search["solution"]["max_risk"] == pytest.approx(0.5)
    _, released = applied(assessment, analyst)
    assert sorted(released.get_column("diagnosis").to_list()) == [
        "E11", "E11", "E11", "E11", "I21", "I21", "I25", "I25",
    ]  # fmt: skip
