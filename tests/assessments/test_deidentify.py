"""Steps 7 and 8 through the services and jobs, on the 10-person data set of conftest."""

from pathlib import Path

import polars as pl
import pytest
from django.conf import settings
from django.urls import reverse

from apps.assessments import deidentify, release_apply, services, steps
from apps.assessments.hierarchies import hierarchies_ensure, hierarchy_preview, hierarchy_set
from apps.core.errors import ApplicationError
from apps.jobs.claiming import job_execute
from tests.assessments.conftest import LOW_ANSWERS
from tests.justify import justify_all


def run(job):
    assert job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    return job


@pytest.fixture
def ready(assessment):
    # Public release, low invasion → threshold 0.1, context 1 → target max risk 0.1 (k = 10).
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(assessment=assessment, answers={})
    return assessment


def test_default_hierarchies_follow_the_column_types(ready):
    specs = {s.column: s for s in hierarchies_ensure(assessment=ready)}
    assert set(specs) == {"age", "sex"}
    # age is recognized as an age: 5-, 10-, 20-year bands, top-coded at 90+, then *.
    assert specs["age"].kind == "interval"
    assert specs["age"].params["top_label"] == "90+"
    assert specs["sex"].kind == "suppress" and specs["sex"].height == 1
    preview = hierarchy_preview(ready, specs["sex"])
    assert [(lv["level"], lv["groups"], lv["smallest"]) for lv in preview] == [
        (0, 2, 3),
        (1, 1, 10),
    ]


def test_hierarchy_errors_name_the_column_and_values(ready):
    with pytest.raises(
        ApplicationError, match="Hierarchy of 'sex'.*not covered|Hierarchy of 'sex'.*M"
    ):
        hierarchy_set(assessment=ready, column="sex", kind="arx", params={}, arx_text="F;*\n")
    with pytest.raises(ApplicationError, match="not a confirmed quasi-identifier"):
        hierarchy_set(assessment=ready, column="email", kind="suppress", params={})


def test_search_choose_apply_and_utility(ready, analyst):
    # k = 10 with 10 rows: only the fully generalized node (age *, sex *) releases a class of
    # 10 without suppression; with a 5% limit (0 rows of 10) nothing else can pass.
    hierarchy_set(assessment=ready, column="age", kind="interval", params={"widths": [10, 20]})
    deidentify.deid_config_set(
        assessment=ready,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.05,
        metric="loss",
        max_levels={},
    )
    job = run(deidentify.assessment_start_search(assessment=ready, user=analyst))
    ready.refresh_from_db()
    search = ready.search_result
    assert search["rows"] == 10 and search["target_class_size"] == 10
    heights = search["heights"]
    assert search["levels"] == {"age": heights["age"], "sex": heights["sex"]}
    assert search["solution"]["min_class_size"] == 10
    assert search["solution"]["suppressed_rows"] == 0
    assert job.result["found"] is True

    run(release_apply.assessment_start_apply(assessment=ready, user=analyst))
    ready.refresh_from_db()
    result = ready.apply_result
    assert (result["rows_in"], result["rows_out"], result["suppressed_rows"]) == (10, 10, 0)
    assert result["passes"] is True
    assert result["risk_before"]["max_risk"] == 1.0
    assert result["risk_after"]["max_risk"] == pytest.approx(0.1)
    assert result["utility"]["entropy_percent"] == pytest.approx(100.0)  # the top node
    released = pl.read_parquet(Path(settings.MEDIA_ROOT) / ready.output_parquet_path)
    assert set(released["age"]) == {"*"} and set(released["sex"]) == {"*"}
    # The e-mail column is pseudonymized with a keyed HMAC: no original address survives.
    assert not set(released["email"]) & {f"p{i}@example.org" for i in range(10)}
    # Other columns are untouched (only shuffled): 5 asthma, 3 diabetes, 2 hypertension.
    assert sorted(released["diagnosis"].to_list()) == sorted(
        ["J45 Asthma"] * 5 + ["E11 Diabetes"] * 3 + ["I10 Hypertension"] * 2
    )
    assert ready.secrets_path  # the HMAC key is stored apart
    assert {s["step"].slug: s["state"] for s in steps.step_states(ready)}["deidentify"] == "done"

    with pytest.raises(ApplicationError, match="Say why"):
        services.assessment_accept_utility(assessment=ready, note="  ")
    services.assessment_accept_utility(assessment=ready, note="Counts by diagnosis only.")
    justify_all(ready)
    states = {s["step"].slug: s["state"] for s in steps.step_states(ready)}
    assert states["utility"] == "done"

    # Changing the suppression limit afterwards makes the applied output stale.
    deidentify.deid_config_set(
        assessment=ready,
        masking={"email": {"method": "hmac"}},
        suppression_limit=0.2,
        metric="loss",
        max_levels={},
    )
    states = {s["step"].slug: s["state"] for s in steps.step_states(ready)}
    assert states["deidentify"] == "stale" and states["utility"] == "stale"
    assert ready.search_result is None


def test_suppression_trades_against_generalization(ready, analyst):
    # Allow 40% suppression: (age 30-39 × F) has 3 rows, (30-39 × M) 2, (40-49 × F) 4, (50 × M) 1.
    # With k = 10 no class of the original data reaches 10, so suppression alone cannot help
    # unless the class is large: the optimum still needs generalization. Check the Pareto set
    # lists the optimum and is sorted by suppressed rows.
    deidentify.deid_config_set(
        assessment=ready, masking={}, suppression_limit=0.4, metric="loss", max_levels={}
    )
    run(deidentify.assessment_start_search(assessment=ready, user=analyst))
    ready.refresh_from_db()
    pareto = ready.search_result["pareto"]
    assert ready.search_result["levels"] in [p["levels"] for p in pareto]
    assert [p["suppressed_rows"] for p in pareto] == sorted(p["suppressed_rows"] for p in pareto)
    for p in pareto:
        assert p["suppressed_rows"] <= 4  # 40% of 10
        assert p["passes"] is True


def test_choose_only_offered_solutions(ready, analyst):
    run(deidentify.assessment_start_search(assessment=ready, user=analyst))
    ready.refresh_from_db()
    with pytest.raises(ApplicationError, match="Choose the optimum or one of the alternatives"):
        deidentify.assessment_choose_solution(assessment=ready, levels={"age": 0, "sex": 0})


def test_bad_masking_settings_are_refused(ready):
    with pytest.raises(ApplicationError, match="keeps nothing"):
        deidentify.deid_config_set(
            assessment=ready,
            masking={"email": {"method": "mask"}},
            suppression_limit=0.05,
            metric="loss",
            max_levels={},
        )
    with pytest.raises(ApplicationError, match="not a direct identifier"):
        deidentify.deid_config_set(
            assessment=ready,
            masking={"age": {"method": "remove"}},
            suppression_limit=0.05,
            metric="loss",
            max_levels={},
        )
    with pytest.raises(ApplicationError, match="between 0 and"):
        hierarchies_ensure(assessment=ready)
        deidentify.deid_config_set(
            assessment=ready,
            masking={},
            suppression_limit=0.05,
            metric="loss",
            max_levels={"sex": 5},
        )


def test_random_pseudonyms_of_too_many_values_are_refused(ready, analyst, monkeypatch):
    """Random pseudonyms hold every distinct value with its pseudonym in memory (the linking
    table): a unique identifier of 100 million rows would outgrow the worker. Past the limit
    (9 here; the 10 e-mail addresses are all distinct) the setting is refused from the
    profile, and the engine refuses the same from its own estimate in any other path (here
    the apply of a configuration saved under a higher limit): the job fails cleanly."""
    import apps.engine.masking as masking

    def configure(method: str) -> None:
        deidentify.deid_config_set(
            assessment=ready,
            masking={"email": {"method": method}},
            suppression_limit=0.05,
            metric="loss",
            max_levels={},
        )

    monkeypatch.setattr(masking, "MAX_MAPPED_VALUES", 9)
    with pytest.raises(ApplicationError, match="'email' has about 10 distinct values. Random"):
        configure("random")
    configure("hmac")  # computed batch by batch: no limit
    configure("encrypt")  # likewise
    monkeypatch.setattr(masking, "MAX_MAPPED_VALUES", 10)
    configure("random")
    run(deidentify.assessment_start_search(assessment=ready, user=analyst))
    ready.refresh_from_db()
    monkeypatch.setattr(masking, "MAX_MAPPED_VALUES", 9)
    job = release_apply.assessment_start_apply(assessment=ready, user=analyst)
    job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "failed"
    assert "'email' has about 10 distinct values. Random pseudonyms keep" in job.error
    ready.refresh_from_db()
    assert not ready.apply_result


def test_the_search_job_times_its_phases(ready, analyst, client):
    """The search job's own timing, read -> encode -> search -> stored result: every
    phase in the job's record (the total covers them, and the job's own run), the
    phases known before storing in the stored result, and the Step 7 page shows them."""
    job = run(deidentify.assessment_start_search(assessment=ready, user=analyst))
    timing = job.result["timing"]
    assert set(timing) == {"read", "encode", "search", "store", "total"}
    phases = [timing[p] for p in ("read", "encode", "search", "store")]
    assert all(isinstance(v, float) and v > 0 for v in phases)
    assert timing["total"] >= sum(phases)
    assert timing["total"] <= job.duration_seconds
    ready.refresh_from_db()
    stored = ready.search_result["timing"]
    assert {p: stored[p] for p in ("read", "encode", "search")} == {
        p: timing[p] for p in ("read", "encode", "search")
    }
    client.force_login(analyst)
    page = client.get(
        reverse(
            "assessment-step",
            kwargs={
                "org": ready.organization.slug,
                "assessment_id": ready.id,
                "slug": "deidentify",
            },
        )
    ).content.decode()
    assert 'data-testid="search-timing"' in page
    assert f"{timing['total']:.2f} s" in page
