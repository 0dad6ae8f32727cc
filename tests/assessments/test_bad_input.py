"""Bad input to Step 7, through the API and the page: a 4xx or a message naming the field,
never a server error, and nothing saved (issue 15)."""

import json

import pytest
from django.urls import reverse

from apps.assessments import deidentify, services
from apps.assessments.models import HierarchySpec
from apps.core.errors import ApplicationError
from tests.assessments.conftest import LOW_ANSWERS
from tests.assessments.test_api import API, post, put


def hierarchy_url(aid, column):
    return f"{API}{aid}/hierarchies/{column}/"


@pytest.fixture
def api(client_for, analyst):
    return client_for(analyst)


@pytest.fixture
def ready(assessment):
    """Steps 1, 3 and 5 done (public, low invasion), through the services."""
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


@pytest.fixture
def api_ready(api, classified):
    """An assessment made over HTTP, Steps 1, 3 and 5 done: its id."""
    created = post(api, API, {"dataset": str(classified.id), "title": "Release"})
    aid = created.json()["id"]
    assert put(api, f"{API}{aid}/release/", {"release_model": "public"}).status_code == 200
    assert put(api, f"{API}{aid}/threshold/", {"answers": LOW_ANSWERS}).status_code == 200
    assert put(api, f"{API}{aid}/context/", {}).status_code == 200
    return aid


@pytest.mark.parametrize(
    "levels",
    ["Any: F, M", {"Any": ["F", "M"]}, 5, [["F", "M"]], [{"Any": "FM"}], None],
)
def test_api_categorical_levels_not_a_list_of_groups_is_a_400(api, api_ready, levels):
    response = put(
        api, hierarchy_url(api_ready, "sex"), {"kind": "categorical", "params": {"levels": levels}}
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["message"].startswith("Hierarchy of 'sex'")
    assert "list of {group: [values]}" in body["message"]
    assert body["extra"]["column"] == "sex"
    assert not HierarchySpec.objects.filter(column="sex").exists()


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"widths": "10"}, "widths must be a list of positive numbers"),
        ({"widths": ["ten"]}, "widths must be a list of positive numbers"),
        ({"widths": [10], "top": "ninety"}, "top must be a number"),
        ({"widths": [10], "bottom": [1]}, "bottom must be a number"),
        ({"widths": [10], "top_label": 5}, "top_label must be text"),
        ({"widths": [True]}, "widths must be a list of positive numbers"),
    ],
)
def test_api_interval_settings_of_the_wrong_type_are_a_400(api, api_ready, params, fragment):
    response = put(api, hierarchy_url(api_ready, "age"), {"kind": "interval", "params": params})
    assert response.status_code == 400, response.content
    assert fragment in response.json()["message"]
    assert response.json()["extra"]["column"] == "age"


@pytest.mark.parametrize(
    ("kind", "params", "fragment"),
    [
        ("prefix", {"lengths": "3"}, "lengths must be a list of whole numbers"),
        ("prefix", {"lengths": [1.5]}, "lengths must be a list of whole numbers"),
        ("date", {"levels": "year"}, "levels must be a list"),
        ("date", {"levels": ["year"], "date_format": 7}, "date_format must be text"),
        ("categorical", {"levels": [{"Any": ["F", "M"]}], "keep_ungrouped": "no"}, "true or false"),
    ],
)
def test_api_other_settings_of_the_wrong_type_are_a_400(api, api_ready, kind, params, fragment):
    response = put(api, hierarchy_url(api_ready, "sex"), {"kind": kind, "params": params})
    assert response.status_code == 400, response.content
    assert fragment in response.json()["message"]


def test_api_hierarchy_that_swaps_values_is_refused(api, api_ready):
    response = put(
        api, hierarchy_url(api_ready, "sex"), {"kind": "arx", "arx_text": "F;M;*\nM;F;*\n"}
    )
    assert response.status_code == 400, response.content
    assert "turns 'F' into 'M' but 'M' into 'F'" in response.json()["message"]
    categorical = put(
        api,
        hierarchy_url(api_ready, "sex"),
        {"kind": "categorical", "params": {"levels": [{"M": ["F"], "F": ["M"]}]}},
    )
    assert categorical.status_code == 400
    assert "not exchange them" in categorical.json()["message"]
    assert not HierarchySpec.objects.filter(column="sex").exists()


@pytest.mark.parametrize("length", [3, 7, 65, 10**9])
def test_pseudonym_length_outside_8_to_64_is_refused_naming_the_column(ready, length):
    with pytest.raises(ApplicationError, match="pseudonym length of 'email' must be 8 to 64"):
        deidentify.deid_config_set(
            assessment=ready,
            masking={"email": {"method": "hmac", "length": length}},
            suppression_limit=0.05,
            metric="loss",
            max_levels={},
        )
    ready.refresh_from_db()
    assert ready.deid_config == {}


@pytest.mark.parametrize("length", [8, 64])
def test_pseudonym_length_within_bounds_is_kept(ready, length):
    deidentify.deid_config_set(
        assessment=ready,
        masking={"email": {"method": "random", "length": length}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    ready.refresh_from_db()
    assert ready.deid_config["masking"]["email"]["length"] == length


@pytest.mark.parametrize("length", [3, 10**9, "abc"])
def test_api_pseudonym_length_is_a_400(api, api_ready, length):
    response = put(
        api,
        f"{API}{api_ready}/deidentify/config/",
        {"masking": {"email": {"method": "hmac", "length": length}}},
    )
    assert response.status_code == 400, response.content
    assert "length" in json.dumps(response.json())


# --------------------------------------------------------------------------- the Step 7 page


def step7(assessment):
    return reverse(
        "assessment-step",
        kwargs={
            "org": assessment.organization.slug,
            "assessment_id": assessment.id,
            "slug": "deidentify",
        },
    )


def post_step7(client, assessment, data):
    response = client.post(step7(assessment), data, follow=True)
    assert response.status_code == 200
    return [str(m) for m in response.context["messages"]]


CONFIG = {"action": "config", "mask-email": "mask", "lead-email": "1", "suppression_limit": "5"}


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"lead-email": "abc"}, "Leading characters kept of 'email' must be a whole number"),
        ({"trail-email": "1.5"}, "Trailing characters kept of 'email' must be a whole number"),
        ({"lead-email": "-2"}, "Leading characters kept of 'email' must be a whole number"),
        ({"maxlevel-age": "x"}, "The maximum level of 'age' must be a whole number"),
        ({"maxlevel-age": "99999999999999999999999"}, "The maximum level of 'age' must be"),
        ({"suppression_limit": "abc"}, "The suppression limit is a percentage"),
        ({"suppression_limit": "nan"}, "The suppression limit is a percentage"),
        ({"suppression_limit": "1e400"}, "The suppression limit is a percentage"),
    ],
)
def test_page_config_with_non_numbers_says_which_field(
    client_for,
    analyst,
    ready,
    change,
    fragment,
):
    from apps.assessments.hierarchies import hierarchies_ensure

    hierarchies_ensure(assessment=ready)
    shown = post_step7(client_for(analyst), ready, {**CONFIG, **change})
    assert any(fragment in m for m in shown), shown
    ready.refresh_from_db()
    assert ready.deid_config == {}


@pytest.mark.parametrize(
    ("kind", "fields", "fragment"),
    [
        ("interval", {"widths": "abc"}, "Widths must be numbers"),
        ("interval", {"widths": "nan"}, "Widths must be numbers"),
        ("interval", {"widths": "inf"}, "Widths must be numbers"),
        ("interval", {"widths": "1e400"}, "Widths must be numbers"),
        ("interval", {"widths": "10", "bottom": "low"}, "Bottom must be a number"),
        ("interval", {"widths": "10", "top": "nan"}, "Top must be a number"),
        ("prefix", {"lengths": "x"}, "Prefix lengths must be whole numbers"),
        ("prefix", {"lengths": "1.5"}, "Prefix lengths must be whole numbers"),
    ],
)
def test_page_hierarchy_with_non_numbers_says_which_field(
    client_for,
    analyst,
    ready,
    kind,
    fields,
    fragment,
):
    column = "age"
    data = {"action": "hierarchy", "column": column, "kind": kind, **fields}
    shown = post_step7(client_for(analyst), ready, data)
    assert any(fragment in m for m in shown), shown
    assert not HierarchySpec.objects.filter(assessment=ready, column=column).exists()


def test_page_choose_with_a_non_number_says_so(client_for, analyst, ready):
    from apps.jobs.claiming import job_execute

    job = deidentify.assessment_start_search(assessment=ready, user=analyst)
    assert job_execute(job_id=str(job.id))
    shown = post_step7(client_for(analyst), ready, {"action": "choose", "level-age": "high"})
    assert any("The level of 'age' must be a whole number" in m for m in shown), shown
    ready.refresh_from_db()
    assert ready.chosen_levels is None or ready.chosen_levels == ready.search_result["levels"]
