"""The Step 7 page's hierarchy builders, through HTTP: each kind and the ARX import."""

import io
import re

import pytest
from django.urls import reverse

from apps.assessments import services
from apps.assessments.models import HierarchySpec
from tests.assessments.conftest import LOW_ANSWERS


@pytest.fixture
def ready(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


def post(client, assessment, data):
    url = reverse(
        "assessment-step",
        kwargs={
            "org": assessment.organization.slug,
            "assessment_id": assessment.id,
            "slug": "deidentify",
        },
    )
    return client.post(url, {"action": "hierarchy", **data})


def spec(assessment, column):
    return HierarchySpec.objects.get(assessment=assessment, column=column)


def test_interval_builder_with_top_code(client_for, analyst, ready):
    response = post(
        client_for(analyst),
        ready,
        {"column": "age", "kind": "interval", "widths": "10, 20", "top": "40", "top_label": "40+"},
    )
    assert response.status_code == 302
    age = spec(ready, "age")
    # Ages 30, 40, 50 → level 1: 30-39 and the top code 40+ (for 40 and 50); level 2: 20-39, 40+.
    rows = {line.split(";")[0]: line.split(";")[1:] for line in age.arx_csv.strip().splitlines()}
    assert rows["30"][0].startswith("30") and rows["40"][0] == "40+" and rows["50"][0] == "40+"
    assert rows["30"][-1] == "*"
    assert age.level_labels[:3] == ["original", "intervals of 10", "intervals of 20"]


def test_categorical_and_prefix_builders(client_for, analyst, ready):
    client = client_for(analyst)
    post(client, ready, {"column": "sex", "kind": "categorical", "groups": "Any: F, M"})
    sex = spec(ready, "sex")
    assert sex.height == 2  # F/M → Any → *
    assert "F;Any;*" in sex.arx_csv
    post(client, ready, {"column": "sex", "kind": "prefix", "lengths": "1"})
    assert spec(ready, "sex").kind == "prefix"


def test_arx_upload_and_a_hierarchy_that_does_not_cover_a_value(client_for, analyst, ready):
    client = client_for(analyst)
    upload = io.BytesIO(b"F;person;*\nM;person;*\n")
    upload.name = "sex.csv"
    post(client, ready, {"column": "sex", "kind": "arx", "arx_file": upload})
    assert spec(ready, "sex").kind == "arx" and spec(ready, "sex").height == 2

    before = spec(ready, "sex").arx_csv
    response = post(client, ready, {"column": "sex", "kind": "arx", "arx_text": "F;*\n"})
    page = client.get(response["Location"]).content.decode()
    assert "Hierarchy of &#x27;sex&#x27;" in page and "M" in page
    assert spec(ready, "sex").arx_csv == before  # nothing saved is lost


def test_reviewer_cannot_change_hierarchies(client_for, analyst, reviewer, ready):
    post(
        client_for(analyst), ready, {"column": "sex", "kind": "categorical", "groups": "Any: F, M"}
    )
    response = post(
        client_for(reviewer), ready, {"column": "sex", "kind": "prefix", "lengths": "1"}
    )
    assert response.status_code == 302
    assert spec(ready, "sex").kind == "categorical"


def test_arx_import_with_range_like_group_labels(client_for, analyst, ready):
    # '30-39' and '30-45' read like overlapping ranges but are an imported hierarchy's
    # group labels: text, as in ARX. The import keeps them as they are.
    client = client_for(analyst)
    text = "30;30-39;adult;*\n40;30-45;adult;*\n50;45-55;older;*\n"
    response = post(client, ready, {"column": "age", "kind": "arx", "arx_text": text})
    assert response.status_code == 302
    age = spec(ready, "age")
    assert (age.kind, age.height) == ("arx", 3)
    assert age.arx_csv == text
    page = client.get(response["Location"]).content.decode()
    assert "overlapping" not in page


def _flash(client, response) -> str:  # type: ignore[no-untyped-def]
    import html

    page = client.get(response["Location"]).content.decode()
    found = re.search(r'class="flash flash-error"[^>]*>(.*?)<', page, flags=re.S)
    assert found, page
    return html.unescape(found.group(1)).strip()


def test_the_web_says_what_the_command_line_says_of_a_hierarchy(client_for, analyst, ready):
    from apps.engine.hierarchy_files import uncovered_message

    client = client_for(analyst)
    # ages 30, 40, 50: a hierarchy of 30 alone leaves out two values, in the data's order
    response = post(client, ready, {"column": "age", "kind": "arx", "arx_text": "30;*\n"})
    message = uncovered_message("age", ["40", "50"], "the text or file given")
    assert message == (
        "hierarchy of 'age' (the text or file given) does not cover 2 values of the data: "
        "'40', '50'; add them to the hierarchy, or correct the data"
    )
    assert _flash(client, response) == f"H{message[1:]}."
    # a file that is not UTF-8, a ragged line, a separator that splits no line
    upload = io.BytesIO(b"F;*\nM;*\n\xe9;*\n")
    upload.name = "sexes.csv"
    response = post(client, ready, {"column": "sex", "kind": "arx", "arx_file": upload})
    assert _flash(client, response) == (
        "Hierarchy file 'sexes.csv' of 'sex', line 3: not UTF-8 text (byte 0xe9); save the "
        "file as UTF-8"
    )
    response = post(client, ready, {"column": "sex", "kind": "arx", "arx_text": "F;*\n\nM\n"})
    assert _flash(client, response) == (
        "Hierarchy of 'sex' (the text or file given), line 3: 1 value, but line 1 has 2 "
        "(separator ';'); every line needs the value and one generalization per level"
    )
    response = post(client, ready, {"column": "sex", "kind": "arx", "arx_text": "F,*\nM,*\n"})
    assert _flash(client, response) == (
        "Hierarchy of 'sex' (the text or file given): no line is split by the separator ';', "
        "but every line is by ','; separate the values by ';'"
    )
