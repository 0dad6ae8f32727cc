"""``/api/v1/assessments/``, through HTTP only: every step, the jobs run in-process, and the
same roles as the pages (figures from test_services.py and test_deidentify.py)."""

import json

import pytest

from apps.assessments import steps
from apps.jobs.claiming import job_execute
from tests.assessments.conftest import CONTROLS_ALL_YES, LOW_ANSWERS, MOTIVES_LOW, WAIVER

API = "/api/v1/assessments/"
SEMI_PUBLIC = {"release_model": "semi_public", "recipient_organization": "Registered users"}
SEMI_PUBLIC_CONTEXT = {"prevalence": 0.001, "prevalence_source": "Provincial registry 2025"}


def url(assessment_id, *parts):
    return f"{API}{assessment_id}/" + "".join(f"{p}/" for p in parts)


def put(client, path, body):
    return client.put(path, json.dumps(body), content_type="application/json")


def post(client, path, body=None):
    return client.post(path, json.dumps(body or {}), content_type="application/json")


def run(client, path):
    """Start a step's job over HTTP and execute it here, as a worker would."""
    response = post(client, path)
    assert response.status_code == 202, response.json()
    job = response.json()
    assert job["status"] == "queued"
    assert job_execute(job_id=job["id"])
    return job


@pytest.fixture
def api(client_for, analyst):
    return client_for(analyst)


@pytest.fixture
def created(api, classified):
    response = post(api, API, {"dataset": str(classified.id), "title": "Release to researchers"})
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def ready(api, created):
    """Public release, low invasion → threshold 0.1, context 1: Step 7 must reach k = 10."""
    aid = created["id"]
    public = {
        "release_model": "public",
        "pseudonym_linkers": "The custodian's data office only",
        "pseudonym_key_kept": "The custodian's key vault, apart from the release",
    }
    assert put(api, url(aid, "release"), public).status_code == 200
    assert put(api, url(aid, "threshold"), {"answers": LOW_ANSWERS}).status_code == 200
    assert put(api, url(aid, "context"), {}).status_code == 200
    return aid


def test_create_list_and_detail(api, created, classified, custodian):
    assert created["title"] == "Release to researchers"
    assert created["status"] == "draft" and created["organization"] == custodian.slug
    assert created["dataset"] == str(classified.id)
    slugs = [s["slug"] for s in created["steps"]]
    assert slugs == [step.slug for step in steps.STEPS]
    assert len(slugs) == 8 and slugs[6] == "deidentify"
    states = {s["slug"]: s["state"] for s in created["steps"]}
    assert states["classification"] == "done" and states["threshold"] == "to do"
    assert created["overall"] is None
    assert created["deidentify_config"]["masking"] == {
        "email": {"method": "remove", "keep_leading": 0, "keep_trailing": 0}
    }

    listed = api.get(API).json()
    assert [a["id"] for a in listed["results"]] == [created["id"]]
    assert api.get(API, {"dataset": str(classified.id)}).json()["count"] == 1
    assert api.get(API, {"organization": custodian.slug}).json()["count"] == 1
    assert api.get(API, {"organization": "elsewhere"}).json()["count"] == 0
    assert api.get(API, {"dataset": "not-a-uuid"}).status_code == 400

    detail = api.get(url(created["id"])).json()
    assert detail["id"] == created["id"] and detail["effective_release_model"] == ""


def test_create_needs_a_data_set_of_the_callers_organization(
    client_for, reviewer, outsider, admin_user, classified
):
    body = {"dataset": str(classified.id)}
    assert post(client_for(reviewer), API, body).status_code == 403
    assert post(client_for(outsider), API, body).status_code == 404
    assert (
        post(
            client_for(admin_user), API, {"dataset": "5d5e4a4c-0000-4000-8000-000000000000"}
        ).status_code
        == 404
    )
    response = post(client_for(admin_user), API, body)
    assert response.status_code == 201
    assert response.json()["title"] == f"Release of {classified.name}"


def test_steps_1_3_5_rules_figures_and_stale_marking(api, created):
    aid = created["id"]
    # Step 1: non-public without a data sharing agreement is handled as semi-public.
    response = put(
        api,
        url(aid, "release"),
        {"release_model": "non_public", "recipient_organization": "University X"},
    )
    assert response.status_code == 200, response.json()
    assert response.json()["effective_release_model"] == "semi_public"
    assert response.json()["stale"] == []
    assert api.get(url(aid)).json()["effective_release_model"] == "semi_public"
    response = put(api, url(aid, "release"), {"release_model": "semi_public"})
    assert response.status_code == 400 and "Name the recipient" in response.json()["message"]
    assert response.json()["extra"] == {"field": "recipient_organization"}
    assert put(api, url(aid, "release"), {"release_model": "secret"}).status_code == 400
    response = put(
        api,
        url(aid, "release"),
        {
            **SEMI_PUBLIC,
            "agreement_kind": "dsa",
            "agreement_reference": "DSA-1",
            "agreement_date": "2026-01-15",
        },
    )
    assert response.json()["agreement_date"] == "2026-01-15"
    assert (
        put(api, url(aid, "release"), SEMI_PUBLIC).json()["effective_release_model"]
        == "semi_public"
    )

    # Step 3: a preset needs a written justification.
    preset = {"answers": LOW_ANSWERS, "mode": "preset", "preset": "open_data_k11"}
    response = put(api, url(aid, "threshold"), preset)
    assert response.status_code == 400 and "justification" in response.json()["message"]
    # k >= 11 cannot be met by a release of these 10 records: refused, with the reason.
    response = put(api, url(aid, "threshold"), {**preset, "justification": "Open data directive."})
    assert response.status_code == 400
    assert response.json()["message"] == (
        "A threshold of 0.09091 is below 1/10 = 0.1: no release of these 10 records can meet "
        "it, since even a single class holding every record has a risk of 1/rows"
    )
    # Every questionnaire answer is required, and only the listed answers are accepted.
    response = put(api, url(aid, "threshold"), {"answers": {**LOW_ANSWERS, "harm": "awful"}})
    assert response.status_code == 400 and "harm" in response.json()["extra"]["fields"]["answers"]
    answers = dict(LOW_ANSWERS)
    del answers["detail"]
    assert put(api, url(aid, "threshold"), {"answers": answers}).status_code == 400
    response = put(api, url(aid, "threshold"), {"answers": LOW_ANSWERS})
    assert (
        response.json()["result"]["value"],
        response.json()["result"]["minimum_class_size"],
    ) == (0.1, 10)

    # Step 5: semi-public → T1 fixed at 0.6 decides.
    response = put(api, url(aid, "context"), {})
    assert response.status_code == 400 and "prevalence" in response.json()["message"]
    response = put(api, url(aid, "context"), SEMI_PUBLIC_CONTEXT)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["result"]["value"], body["result"]["deciding_attack"]) == (0.6, "T1")
    assert body["release_model"] == "semi_public" and body["acquaintances"] == 150
    overall = api.get(url(aid, "overall")).json()["overall"]
    assert overall["data_risk_target"] == pytest.approx(0.1 / 0.6) and overall["value"] is None

    # Changing the release model makes the context risk stale, visible on the assessment.
    states = {s["slug"]: s["state"] for s in api.get(url(aid)).json()["steps"]}
    assert states["context-risk"] == "done"
    response = put(api, url(aid, "release"), {"release_model": "public"})
    assert "context-risk" in response.json()["stale"]
    detail = api.get(url(aid)).json()
    states = {s["slug"]: s["state"] for s in detail["steps"]}
    assert states["context-risk"] == "stale" and states["threshold"] == "done"
    assert detail["context"]["result"]["value"] == 1.0  # recomputed, awaiting confirmation
    assert put(api, url(aid, "context"), {}).status_code == 200
    states = {s["slug"]: s["state"] for s in api.get(url(aid)).json()["steps"]}
    assert states["context-risk"] == "done"


def test_non_public_context_requires_controls_and_motives(api, created):
    aid = created["id"]
    put(
        api,
        url(aid, "release"),
        {
            "release_model": "non_public",
            "recipient_organization": "Uni",
            "agreement_kind": "dsa",
            "agreement_reference": "DSA-1",
        },
    )
    response = put(api, url(aid, "context"), SEMI_PUBLIC_CONTEXT)
    assert response.status_code == 400
    assert set(response.json()["extra"]["fields"]) == {"controls", "motives"}
    controls, motives = CONTROLS_ALL_YES, MOTIVES_LOW
    response = put(
        api, url(aid, "context"), {**SEMI_PUBLIC_CONTEXT, "controls": controls, "motives": motives}
    )
    assert response.status_code == 200, response.json()
    result = response.json()["result"]
    # Strong controls, low motives: T1 = 0.05; the breach rate T3 = 0.27 decides.
    assert (result["insider"]["probability"], result["value"], result["deciding_attack"]) == (
        0.05,
        0.27,
        "T3",
    )
    assert api.get(url(aid, "context")).json()["controls"]["training"] == "yes"


def test_risk_job_and_overall(api, created):
    aid = created["id"]
    put(api, url(aid, "release"), SEMI_PUBLIC)
    put(api, url(aid, "threshold"), {"answers": LOW_ANSWERS})
    put(api, url(aid, "context"), SEMI_PUBLIC_CONTEXT)
    assert api.get(url(aid, "risk")).json() == {"result": None, "job": None, "population": {}}
    job = run(api, url(aid, "risk"))
    body = api.get(url(aid, "risk")).json()
    assert body["job"]["id"] == job["id"] and body["job"]["status"] == "succeeded"
    # Classes on (age, sex): sizes 3, 2, 4, 1 → max risk 1, average 4/10.
    assert (body["result"]["max_risk"], body["result"]["average_risk"]) == (1.0, 0.4)
    overall = api.get(url(aid, "overall")).json()["overall"]
    assert overall["value"] == pytest.approx(0.6) and overall["passes"] is False
    assert overall["target_class_size"] == 6
    detail = api.get(url(aid)).json()
    assert detail["overall"] == overall and detail["data_risk"]["result"]["max_risk"] == 1.0
    assert {s["slug"]: s["state"] for s in detail["steps"]}["overall-risk"] == "done"


def test_search_choose_apply_utility_and_release_files(
    client_for, api, ready, analyst, reviewer, admin_user
):
    aid = ready
    hierarchies = api.get(url(aid, "hierarchies")).json()
    assert [(h["column"], h["kind"]) for h in hierarchies] == [
        ("age", "interval"),
        ("sex", "suppress"),
    ]
    sex = hierarchies[1]
    assert [(lv["level"], lv["groups"], lv["smallest"]) for lv in sex["preview"]] == [
        (0, 2, 3),
        (1, 1, 10),
    ]
    response = put(
        api, url(aid, "hierarchies", "age"), {"kind": "interval", "params": {"widths": [10, 20]}}
    )
    assert response.status_code == 200, response.json()
    assert response.json()["level_labels"][:3] == ["original", "intervals of 10", "intervals of 20"]
    response = put(api, url(aid, "hierarchies", "email"), {"kind": "suppress"})
    assert (
        response.status_code == 400
        and "not a confirmed quasi-identifier" in response.json()["message"]
    )

    config = {"masking": {"email": {"method": "hmac"}}, "suppression_limit": 0.05, "metric": "loss"}
    response = put(api, url(aid, "deidentify", "config"), config)
    assert response.status_code == 200, response.json()
    assert response.json()["direct_identifiers"] == ["email"]
    response = put(
        api, url(aid, "deidentify", "config"), {"masking": {"email": {"method": "mask"}}}
    )
    assert response.status_code == 400 and "keeps nothing" in response.json()["message"]
    assert put(api, url(aid, "deidentify", "config"), {"metric": "nonsense"}).status_code == 400

    run(api, url(aid, "search"))
    search = api.get(url(aid, "search")).json()
    assert search["job"]["status"] == "succeeded"
    assert search["result"]["target_class_size"] == 10
    assert search["result"]["solution"]["min_class_size"] == 10
    assert search["chosen_levels"] == search["result"]["levels"]
    response = post(api, url(aid, "choose"), {"levels": {"age": 0, "sex": 0}})
    assert response.status_code == 400 and "Choose the optimum" in response.json()["message"]
    offered = search["result"]["pareto"][0]["levels"]
    response = post(api, url(aid, "choose"), {"levels": offered})
    assert response.status_code == 200 and response.json()["chosen_levels"] == offered

    # Nothing to preview or download before the file is written.
    assert api.get(url(aid, "release", "preview")).status_code == 404
    run(api, url(aid, "apply"))
    applied = api.get(url(aid, "apply")).json()
    assert applied["job"]["status"] == "succeeded"
    result = applied["result"]
    assert (result["rows_in"], result["rows_out"], result["suppressed_rows"]) == (10, 10, 0)
    assert result["passes"] is True and result["risk_after"]["max_risk"] == pytest.approx(0.1)

    response = put(api, url(aid, "utility"), {"note": "  "})
    assert response.status_code == 400 and "Say why" in response.json()["message"]
    response = put(api, url(aid, "utility"), {"note": "Counts by diagnosis only."})
    assert response.status_code == 200 and response.json()["accepted"] is True
    states = {s["slug"]: s["state"] for s in api.get(url(aid)).json()["steps"]}
    assert states["deidentify"] == "done" and states["utility"] == "done"

    # Release files: preview for analysts and administrators, download after approval,
    # keys and linking tables for administrators only.
    preview = api.get(url(aid, "release", "preview")).json()
    assert len(preview["rows"]) == 10 and "email" in preview["columns"]
    assert {row[preview["columns"].index("age")] for row in preview["rows"]} == {"*"}
    assert client_for(admin_user).get(url(aid, "release", "preview")).status_code == 200
    assert client_for(reviewer).get(url(aid, "release", "preview")).status_code == 403
    for user in (analyst, reviewer, admin_user):
        for fmt in ("csv", "parquet"):
            response = client_for(user).get(url(aid, "release", "download"), {"format": fmt})
            assert response.status_code == 403, (user.username, fmt)
            assert "approves" in response.json()["message"]
    secrets = client_for(admin_user).get(url(aid, "release", "secrets"))
    assert secrets.status_code == 200
    assert "keys" in json.loads(b"".join(secrets.streaming_content))
    for user in (analyst, reviewer):
        assert client_for(user).get(url(aid, "release", "secrets")).status_code == 403

    # Changing the suppression limit makes the applied output stale and drops the search.
    response = put(api, url(aid, "deidentify", "config"), {**config, "suppression_limit": 0.2})
    assert response.json()["stale"] == ["deidentify", "utility"]
    assert api.get(url(aid, "search")).json()["result"] is None

    # Back to 5 %: search, apply and accept again, measure Step 4, then the review, through
    # the API as well.
    assert put(api, url(aid, "deidentify", "config"), config).status_code == 200
    for step in ("search", "apply", "risk"):
        run(api, url(aid, step))
    assert put(api, url(aid, "utility"), {"note": "Counts by diagnosis only."}).status_code == 200
    # Each altered variable needs its justification (EMA Policy 0070), given over the API:
    # the e-mail masked, age and sex generalized.
    missing = api.get(url(aid, "justifications")).json()["missing"]
    assert sorted(missing) == ["age", "email", "sex"]
    response = put(
        api,
        url(aid, "justifications"),
        {"justifications": {c: f"{c}: no finer detail is needed for counts." for c in missing}},
    )
    assert response.status_code == 200, response.json()
    assert api.get(url(aid, "justifications")).json()["missing"] == []
    response = post(
        api, url(aid, "submit"), {"note": "Ready for review.", "intruder_waiver": WAIVER}
    )
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "submitted"
    response = post(
        client_for(reviewer), url(aid, "decide"), {"decision": "approve", "reasons": "Meets it."}
    )
    assert response.status_code == 201, response.json()
    assert response.json()["final"] is True
    response = client_for(reviewer).get(url(aid, "release", "download"), {"format": "csv"})
    assert response.status_code == 200
    assert response["Content-Disposition"].endswith('-deidentified.csv"')
    header = b"".join(response.streaming_content).decode().splitlines()[0]
    assert set(header.split(",")) == set(preview["columns"])
    from apps.audit.models import AuditEvent  # downloads are audited, as on the pages

    (event,) = AuditEvent.objects.filter(action="download.release")
    assert (event.actor, event.details["format"]) == (reviewer, "csv")
    assert AuditEvent.objects.filter(action="download.secrets", actor=admin_user).count() == 1
    assert AuditEvent.objects.filter(action="assessment.deidentify.choose").count() == 1
    response = client_for(reviewer).get(url(aid, "release", "download"), {"format": "parquet"})
    assert response.status_code == 200 and b"".join(response.streaming_content)[:4] == b"PAR1"
    assert (
        client_for(reviewer).get(url(aid, "release", "download"), {"format": "xlsx"}).status_code
        == 400
    )
    # An approved assessment is frozen.
    response = put(api, url(aid, "utility"), {"note": "Again."})
    assert response.status_code == 409 and "frozen" in response.json()["message"]


GET_PATHS = (
    (),
    ("release",),
    ("threshold",),
    ("risk",),
    ("context",),
    ("overall",),
    ("deidentify", "config"),
    ("hierarchies",),
    ("search",),
    ("apply",),
    ("utility",),
    ("release", "preview"),
    ("release", "download"),
    ("release", "secrets"),
)
WRITES = (
    ("put", ("release",), {"release_model": "public"}),
    ("put", ("threshold",), {"answers": LOW_ANSWERS}),
    ("put", ("context",), {}),
    ("put", ("deidentify", "config"), {}),
    ("put", ("hierarchies", "age"), {"kind": "suppress"}),
    ("put", ("utility",), {"note": "Fine."}),
    ("post", ("risk",), None),
    ("post", ("search",), None),
    ("post", ("choose",), {"levels": {"age": 0, "sex": 0}}),
    ("post", ("apply",), None),
)


def test_a_level_cap_applies_to_a_default_hierarchy_the_api_shows(api, ready):
    # Nothing saved: GET hierarchies shows the defaults (age in intervals, sex kept or *).
    from apps.assessments.models import HierarchySpec

    aid = ready
    shown = {h["column"]: h for h in api.get(url(aid, "hierarchies")).json()}
    assert not HierarchySpec.objects.filter(assessment_id=aid).exists()
    height = shown["age"]["height"]
    assert height >= 2 and shown["sex"]["height"] == 1
    config = {"suppression_limit": 0.05, "metric": "loss", "max_levels": {"age": height - 1}}
    response = put(api, url(aid, "deidentify", "config"), config)
    assert response.status_code == 200, response.json()
    assert response.json()["max_levels"] == {"age": height - 1}
    # Above the default hierarchy's height, and on a column that has none: named refusals.
    config["max_levels"] = {"age": height + 1}
    response = put(api, url(aid, "deidentify", "config"), config)
    assert response.status_code == 400
    assert (
        f"The maximum level of 'age' must be between 0 and {height}." in response.json()["message"]
    )
    config["max_levels"] = {"email": 0}
    response = put(api, url(aid, "deidentify", "config"), config)
    assert (
        response.status_code == 400
        and "'email' is not a quasi-identifier" in (response.json()["message"])
    )
    # The search then looks within the cap (the default hierarchy, now saved).
    run(api, url(aid, "search"))
    result = api.get(url(aid, "search")).json()["result"]
    assert result["caps"] == {"age": height - 1}
    assert result["nodes_total"] == height * 2 and result["nodes_uncapped"] == (height + 1) * 2
    # (k = 10 on 10 people needs a single group: age * as well, which the cap forbids)
    assert result["solution"] is None


def test_permissions_matrix(client_for, reviewer, outsider, created):
    aid = created["id"]
    as_reviewer, as_outsider = client_for(reviewer), client_for(outsider)
    for method, parts, body in WRITES:
        send = put if method == "put" else post
        assert send(as_reviewer, url(aid, *parts), body).status_code == 403, parts
        assert send(as_outsider, url(aid, *parts), body).status_code == 404, parts
    for parts in GET_PATHS:
        assert as_outsider.get(url(aid, *parts)).status_code == 404, parts
    readable = [p for p in GET_PATHS if p[:1] != ("release",) or p == ("release",)]
    for parts in readable:
        assert as_reviewer.get(url(aid, *parts)).status_code == 200, parts
    assert as_reviewer.get(url(aid, "release", "preview")).status_code == 403
    assert as_reviewer.get(url(aid, "release", "download")).status_code == 403
    assert as_reviewer.get(url(aid, "release", "secrets")).status_code == 403
    assert as_outsider.get(API).json()["count"] == 0
    # Reading the hierarchies shows the defaults a draft would get, and saves none.
    from apps.assessments.models import HierarchySpec

    shown = as_reviewer.get(url(aid, "hierarchies")).json()
    assert [h["column"] for h in shown] == ["age", "sex"]
    assert not HierarchySpec.objects.filter(assessment_id=aid).exists()
    # Nothing was changed by the refused writes.
    detail = as_reviewer.get(url(aid)).json()
    assert detail["release"]["release_model"] == "" and detail["data_risk"]["job"] is None
    # Anonymous callers are refused, and told how to authenticate.
    from django.test import Client

    anonymous = Client().get(url(aid))
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == 'Bearer realm="api"'


def test_schema_documents_the_assessment_endpoints(api):
    import yaml

    paths = set(yaml.safe_load(api.get("/api/schema/").content)["paths"])
    for suffix in (
        "",
        "{id}/",
        "{id}/release/",
        "{id}/threshold/",
        "{id}/risk/",
        "{id}/context/",
        "{id}/overall/",
        "{id}/deidentify/config/",
        "{id}/hierarchies/",
        "{id}/hierarchies/{column}/",
        "{id}/search/",
        "{id}/choose/",
        "{id}/apply/",
        "{id}/utility/",
        "{id}/release/preview/",
        "{id}/release/download/",
        "{id}/release/secrets/",
    ):
        assert f"{API}{suffix}" in paths, suffix
