"""Every paginated list takes ``limit`` 1–1000 and ``offset`` ≥ 0; anything else is a 400
naming the parameter (a huge limit used to reach the database and fail there)."""

import pytest

from apps.core.pagination import MAX_LIMIT

LISTS = [
    "/api/v1/organizations/",
    "/api/v1/datasets/",
    "/api/v1/jobs/",
    "/api/v1/assessments/",
    "/api/v1/audit/",
    "/api/v1/reports/",
]


@pytest.mark.parametrize("url", LISTS)
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("limit=10000000000000000000000000", "limit"),
        ("limit=1001", "limit"),
        ("limit=0", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("offset=-1", "offset"),
        ("offset=abc", "offset"),
        ("limit=5&offset=1.5x", "offset"),
        # Issue 23 (schemathesis): a query integer is written in digits; 240.0, 1e2 and
        # " 7" are not integers in a URL, whatever DRF's number parsing makes of them.
        ("offset=240.0", "offset"),
        ("limit=10.0", "limit"),
        ("offset=1e2", "offset"),
        ("limit=%207", "limit"),
        ("offset=%2B3", "offset"),
    ],
)
def test_bad_limit_or_offset_is_a_400_naming_it(client_for, admin_user, url, query, field):
    response = client_for(admin_user).get(f"{url}?{query}")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["message"] == "Validation error"
    assert list(body["extra"]["fields"]) == [field]


@pytest.mark.parametrize("url", LISTS)
def test_good_limit_and_offset_page_through(client_for, admin_user, url):
    response = client_for(admin_user).get(f"{url}?limit={MAX_LIMIT}&offset=0")
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"count", "next", "previous", "results"}
    far = client_for(admin_user).get(f"{url}?limit=1&offset=10000000000000000000000")
    assert far.status_code == 200
    assert far.json()["results"] == []
    # Any number of digits (schemathesis sent 36): an empty page, as the schema allows.
    farther = client_for(admin_user).get(f"{url}?offset=392645566770661769472524484654137344")
    assert farther.status_code == 200 and farther.json()["results"] == []


def test_pages_follow_each_other(client_for, admin_user, custodian, org_factory):
    from apps.accounts.services import membership_set

    for name in ("Second", "Third"):
        membership_set(organization=org_factory(name), user=admin_user, role="reviewer")
    client = client_for(admin_user)
    first = client.get("/api/v1/organizations/?limit=2").json()
    assert (first["count"], len(first["results"]), first["previous"]) == (3, 2, None)
    assert "offset=2" in first["next"]
    second = client.get(first["next"]).json()
    assert (len(second["results"]), second["next"]) == (1, None)
    seen = {o["slug"] for o in first["results"] + second["results"]}
    assert len(seen) == 3


def test_the_schema_states_the_bounds(client_for, admin_user):
    import yaml

    schema = yaml.safe_load(client_for(admin_user).get("/api/schema/").content)
    parameters = {p["name"]: p for p in schema["paths"]["/api/v1/datasets/"]["get"]["parameters"]}
    assert parameters["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert parameters["offset"]["schema"] == {"type": "integer", "minimum": 0}


@pytest.mark.parametrize(
    "query",
    ["offset=-1&offset=0", "limit=5&limit=6", "organization=a&organization=b"],
)
def test_a_parameter_given_twice_is_a_400(client_for, admin_user, query):
    response = client_for(admin_user).get(f"/api/v1/audit/?{query}")
    assert response.status_code == 400
    name = query.split("=")[0]
    assert response.json()["extra"]["fields"] == {name: ["Give this parameter once."]}
