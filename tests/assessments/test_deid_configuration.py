"""Step 7's configuration as one typed value (issue 24): every stored shape reads back, the
one parser refuses bad settings naming the field, and the page and the API store the same
configuration for the same settings."""

import pytest
from django.urls import reverse

from apps.assessments import deidentify
from apps.assessments.configuration import (
    DeidConfig,
    Masking,
    PrivacyModel,
    Technique,
    parse,
)
from apps.assessments.models import Assessment
from apps.core.errors import ApplicationError
from tests.assessments import test_bad_input
from tests.assessments.test_api import API, put

# Step 7 ready through the services (``ready``) and over HTTP (``api_ready``, with ``api``).
api, api_ready, ready = test_bad_input.api, test_bad_input.api_ready, test_bad_input.ready

# The first form stored (a4357e9): four keys, masking without numbers.
OLDEST = {
    "masking": {"email": {"method": "hmac"}},
    "suppression_limit": 0.1,
    "metric": "entropy",
    "max_levels": {"age": 1},
}
# As deid_config_set stores it today, with the page's numbers, the API's length, a model,
# the readings of findings and the techniques techniques_set adds.
CURRENT = {
    "masking": {
        "email": {"method": "hmac", "length": 16, "keep_leading": 0, "keep_trailing": 0},
        "phone": {"method": "mask", "keep_leading": 2, "keep_trailing": 0},
    },
    "suppression_limit": 0.05,
    "event_suppression_limit": 0.05,
    "metric": "loss",
    "max_levels": {"age": 2},
    "privacy_models": [{"column": "diagnosis", "spec": "distinct-l=2"}],
    "csv_formula_guard": False,
    "identifiers_reviewed": {
        "note": {"reason": "Only ward names.", "ground": "", "by": "ann", "kinds": ["LOC"]}
    },
    "columns_reviewed": {},
    "techniques": [
        {"technique": "local_suppression", "importance": {"age": 2.0, "sex": 1.0}},
        {"technique": "top_bottom_coding", "column": "income", "top": 90000.0, "bottom": None},
        {"technique": "noise", "column": "stay", "scale": 0.1, "kind": "additive"},
    ],
}


def test_the_oldest_stored_form_reads_with_the_defaults_of_what_it_lacks():
    config = DeidConfig.from_json(OLDEST)
    assert config.masking == {"email": Masking("hmac")}
    assert config.masking["email"].pseudonym_length == 32
    assert (config.masking["email"].leading, config.masking["email"].trailing) == (0, 0)
    assert config.suppression_limit == 0.1 and config.metric == "entropy"
    assert config.max_levels == {"age": 1}
    assert config.privacy_models == () and config.csv_formula_guard is True
    assert config.techniques is None
    assert config.identifiers_reviewed == {} and config.columns_reviewed == {}
    # written back: the four keys as they were, and the defaults made explicit
    assert config.to_json() == {
        **OLDEST,
        "event_suppression_limit": 0.05,
        "privacy_models": [],
        "csv_formula_guard": True,
        "identifiers_reviewed": {},
        "columns_reviewed": {},
    }


@pytest.mark.parametrize("stored", [None, {}])
def test_nothing_stored_is_the_default_configuration(stored):
    assert DeidConfig.from_json(stored) == DeidConfig()
    assert DeidConfig().suppression_limit == 0.05 and DeidConfig().metric == "loss"
    assert "techniques" not in DeidConfig.from_json(stored).to_json()


def test_the_current_form_reads_by_attribute_and_writes_back_unchanged():
    config = DeidConfig.from_json(CURRENT)
    assert config.masking["email"] == Masking("hmac", 16, 0, 0)
    assert config.masking["phone"].leading == 2
    assert config.privacy_models == (PrivacyModel("diagnosis", "distinct-l=2"),)
    assert config.csv_formula_guard is False
    local, coding, noise = config.techniques or ()
    assert local == Technique("local_suppression", importance={"age": 2.0, "sex": 1.0})
    assert (coding.column, coding.top, coding.bottom) == ("income", 90000.0, None)
    assert (noise.scale, noise.kind) == (0.1, "additive")
    assert config.identifiers_reviewed["note"]["by"] == "ann"
    assert config.to_json() == CURRENT


def test_a_setting_stored_before_a_rule_reads_back_as_stored():
    """1000 characters kept, from before the half-of-a-value rule: read as is (the apply
    job refuses it, naming the column), never corrected silently."""
    stored = {"masking": {"full_name": {"method": "mask", "keep_leading": 1000}}}
    config = DeidConfig.from_json(stored)
    assert config.masking["full_name"] == Masking("mask", keep_leading=1000)
    assert config.to_json()["masking"] == stored["masking"]


@pytest.mark.parametrize(
    ("data", "message", "extra"),
    [
        (
            {"suppression_limit": 1.5},
            "The suppression limit is a share between 0 and 1 (e.g. 0.05).",
            {"field": "suppression_limit"},
        ),
        (
            {"suppression_limit": float("nan")},
            "The suppression limit is a share between 0 and 1 (e.g. 0.05).",
            {"field": "suppression_limit"},
        ),
        (
            {"suppression_limit": True},
            "The suppression limit is a share between 0 and 1 (e.g. 0.05).",
            {"field": "suppression_limit"},
        ),
        (
            {"metric": "nonsense"},
            "'nonsense' is not an information-loss metric.",
            {"field": "metric"},
        ),
        (
            {"masking": {"email": {"method": "blur"}}},
            "'blur' is not a masking method (email).",
            {"column": "email"},
        ),
        (
            {"masking": {"email": {}}},
            "'None' is not a masking method (email).",
            {"column": "email"},
        ),
        (
            {"masking": {"email": {"method": "hmac", "length": 7}}},
            "The pseudonym length of 'email' must be 8 to 64 hex characters, not 7.",
            {"column": "email", "field": "length"},
        ),
        (
            {"masking": {"email": {"method": "mask", "keep_trailing": -1}}},
            "The number of trailing characters kept of 'email' must be a whole number from 0 "
            "to 1000, not -1.",
            {"column": "email", "field": "keep_trailing"},
        ),
        (
            {"max_levels": {"age": "2"}},
            "The maximum level of 'age' must be a whole number, not '2'.",
            {"column": "age"},
        ),
        (
            {"privacy_models": "distinct-l=2"},
            "The privacy models are a list of variables with their model.",
            {"field": "privacy_models"},
        ),
    ],
)
def test_the_parser_refuses_naming_the_field(data, message, extra):
    with pytest.raises(ApplicationError) as refused:
        parse(data)
    assert refused.value.message == message
    assert refused.value.extra == extra


def test_the_parser_keeps_what_is_left_out_and_what_is_set_apart():
    base = DeidConfig.from_json(CURRENT)
    config = parse(
        {"masking": {"email": {"method": "remove"}}, "metric": "entropy", "max_levels": {}},
        base=base,
    )
    assert config.masking == {"email": Masking("remove")}
    assert (config.metric, config.max_levels) == ("entropy", {})
    # left out: kept from the base (the API's "privacy models left out = unchanged")
    assert config.privacy_models == base.privacy_models
    assert config.suppression_limit == 0.05 and config.csv_formula_guard is False
    # set apart: never read from the settings
    assert config.techniques == base.techniques
    assert config.identifiers_reviewed == base.identifiers_reviewed
    # a model without a specification (the page sends one per sensitive variable) is none
    cleared = parse({"privacy_models": [{"column": "diagnosis", "spec": " "}]}, base=base)
    assert cleared.privacy_models == ()


def test_the_page_and_the_api_store_the_same_configuration(
    client_for, analyst, ready, api, api_ready
):
    page = client_for(analyst).post(
        reverse(
            "assessment-step",
            kwargs={
                "org": ready.organization.slug,
                "assessment_id": ready.id,
                "slug": "deidentify",
            },
        ),
        {
            "action": "config",
            "mask-email": "hmac",
            "lead-email": "0",
            "trail-email": "0",
            "suppression_limit": "10",
            "metric": "entropy",
            "maxlevel-age": "1",
            "csv_formula_guard": "on",
            "pm-kind-diagnosis": "distinct-l",
            "pm-l-diagnosis": "2",
        },
    )
    assert page.status_code == 302
    response = put(
        api,
        f"{API}{api_ready}/deidentify/config/",
        {
            "masking": {"email": {"method": "hmac"}},
            "suppression_limit": 0.1,
            "metric": "entropy",
            "max_levels": {"age": 1},
            "privacy_models": [{"column": "diagnosis", "spec": "distinct-l=2"}],
        },
    )
    assert response.status_code == 200, response.content
    ready.refresh_from_db()
    expected = {
        "masking": {"email": {"method": "hmac", "keep_leading": 0, "keep_trailing": 0}},
        "suppression_limit": 0.1,
        "event_suppression_limit": 0.05,
        "metric": "entropy",
        "max_levels": {"age": 1},
        "privacy_models": [{"column": "diagnosis", "spec": "distinct-l=2"}],
        "csv_formula_guard": True,
        "identifiers_reviewed": {},
        "columns_reviewed": {},
    }
    assert ready.deid_config == expected
    assert Assessment.objects.get(id=api_ready).deid_config == expected
    # read back through the one type, by attribute
    assert deidentify.deid_config(ready).masking["email"].method == "hmac"
    assert response.json()["masking"] == expected["masking"]


def test_the_page_and_the_api_refuse_the_same_setting_with_the_same_message(
    client_for,
    analyst,
    ready,
    api,
    api_ready,
):
    """A maximum level above the hierarchy's top, checked once against the assessment."""
    page = client_for(analyst).post(
        reverse(
            "assessment-step",
            kwargs={
                "org": ready.organization.slug,
                "assessment_id": ready.id,
                "slug": "deidentify",
            },
        ),
        {"action": "config", "suppression_limit": "5", "metric": "loss", "maxlevel-age": "99"},
        follow=True,
    )
    messages = [str(m) for m in page.context["messages"]]
    response = put(api, f"{API}{api_ready}/deidentify/config/", {"max_levels": {"age": 99}})
    assert response.status_code == 400
    assert response.json()["message"] in messages
    assert response.json()["message"].startswith("The maximum level of 'age' must be between 0")
    ready.refresh_from_db()
    assert ready.deid_config == {}
