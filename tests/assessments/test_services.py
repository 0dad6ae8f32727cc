"""Each step's rules, through the services (hand-computed figures in comments)."""

import pytest

from apps.assessments import services, steps
from apps.assessments.models import ThresholdMode
from apps.assessments.selectors import overall_risk
from apps.core.errors import ApplicationError
from apps.jobs.claiming import job_execute
from tests.assessments.conftest import CONTROLS_ALL_YES, HIGH_ANSWERS, LOW_ANSWERS, MOTIVES_LOW


def test_non_public_without_agreement_is_handled_as_semi_public(assessment):
    services.assessment_set_release(
        assessment=assessment, release_model="non_public", recipient_organization="University X"
    )
    assert assessment.release_model == "non_public"
    assert assessment.effective_release_model == "semi_public"
    services.assessment_set_release(
        assessment=assessment,
        release_model="non_public",
        recipient_organization="University X",
        agreement_kind="dsa",
        agreement_reference="DSA-2026-014",
    )
    assert assessment.effective_release_model == "non_public"
    # Terms of use are not a data sharing agreement.
    services.assessment_set_release(
        assessment=assessment,
        release_model="non_public",
        recipient_organization="University X",
        agreement_kind="terms_of_use",
        agreement_reference="ToU v2",
    )
    assert assessment.effective_release_model == "semi_public"


def test_release_rules(assessment):
    with pytest.raises(ApplicationError, match="Name the recipient"):
        services.assessment_set_release(assessment=assessment, release_model="semi_public")
    with pytest.raises(ApplicationError, match="agreement's reference"):
        services.assessment_set_release(
            assessment=assessment,
            release_model="non_public",
            recipient_organization="X",
            agreement_kind="dsa",
        )
    with pytest.raises(ApplicationError, match="'secret' is not a release model"):
        services.assessment_set_release(assessment=assessment, release_model="secret")
    services.assessment_set_release(assessment=assessment, release_model="public")
    assert assessment.release_model == "public"


def test_threshold_from_questionnaire_by_profile(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    r = assessment.threshold_result
    assert (r["invasion_of_privacy"]["level"], r["invasion_of_privacy"]["total"]) == ("low", 0)
    assert (r["value"], r["minimum_class_size"], r["origin"]) == (0.1, 10, "profile")
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=HIGH_ANSWERS
    )
    assert (
        assessment.threshold_result["value"],
        assessment.threshold_result["minimum_class_size"],
    ) == (0.05, 20)
    services.assessment_set_threshold(
        assessment=assessment, profile="pdpc_2018", answers=HIGH_ANSWERS
    )
    assert assessment.threshold_result["value"] == 0.01


def test_override_needs_a_written_justification(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    with pytest.raises(ApplicationError, match="justification"):
        services.assessment_set_threshold(
            assessment=assessment,
            profile="ontario_ipc_2016",
            answers=LOW_ANSWERS,
            mode=ThresholdMode.CUSTOM,
            custom_value=0.2,
        )
    with pytest.raises(ApplicationError, match="justification"):
        services.assessment_set_threshold(
            assessment=assessment,
            profile="ontario_ipc_2016",
            answers=LOW_ANSWERS,
            mode=ThresholdMode.PRESET,
            preset="open_data_k11",
        )
    assert assessment.threshold_result is None
    # k >= 11 can never be met by a release of these 10 records: refused with the reason.
    with pytest.raises(ApplicationError, match=r"below 1/10 = 0\.1: no release of these 10"):
        services.assessment_set_threshold(
            assessment=assessment,
            profile="ontario_ipc_2016",
            answers=LOW_ANSWERS,
            mode=ThresholdMode.PRESET,
            preset="open_data_k11",
            justification="Released as open data under the provincial directive.",
        )
    assert assessment.threshold_result is None


def custom(assessment, value, justification=""):  # type: ignore[no-untyped-def]
    return services.assessment_set_threshold(
        assessment=assessment,
        profile="ontario_ipc_2016",
        answers=LOW_ANSWERS,
        mode=ThresholdMode.CUSTOM,
        custom_value=value,
        justification=justification,
    )


def test_thresholds_that_make_no_sense_are_refused(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    sentence = "The recipient is a hospital research unit under contract with audit rights."
    with pytest.raises(ApplicationError, match=r"above 0\.5: .*unique records could be released"):
        custom(assessment, 1.0, sentence)
    with pytest.raises(ApplicationError, match=r"below 1/10 = 0\.1"):
        custom(assessment, 1e-6, sentence)
    # 0.2 is outside the IPC range 0.05-0.1: a word is not enough, a sentence is.
    with pytest.raises(ApplicationError, match="at least one full sentence"):
        custom(assessment, 0.2, "contract")
    custom(assessment, 0.2, sentence)
    r = assessment.threshold_result
    assert (r["origin"], r["value"], r["outside_profile_range"]) == ("custom", 0.2, True)
    assert r["profile_range"] == [0.05, 0.1] and r["justification"] == sentence
    # Inside the range a custom value still needs a reason, but a short one will do.
    custom(assessment, 0.1, "Agreed with the custodian.")
    assert assessment.threshold_result["outside_profile_range"] is False


def test_context_risk_per_release_model(assessment):
    services.assessment_set_release(assessment=assessment, release_model="public")
    services.assessment_set_context(assessment=assessment, answers={})
    assert (assessment.context_result["value"], assessment.context_result["deciding_attack"]) == (
        1.0,
        "public",
    )

    # Semi-public: T1 fixed at 0.6; T2 = 1 - 0.999^150 = 1 - e^(150·ln 0.999) = 0.139357;
    # T3 = 0.27 → context risk 0.6.
    services.assessment_set_release(
        assessment=assessment,
        release_model="semi_public",
        recipient_organization="Registered users",
    )
    services.assessment_set_context(
        assessment=assessment,
        answers={"prevalence": 0.001, "prevalence_source": "Provincial registry 2025"},
    )
    r = assessment.context_result
    assert (r["value"], r["deciding_attack"], r["insider"]["probability"]) == (0.6, "T1", 0.6)
    assert abs(r["acquaintance"]["probability"] - 0.139357) < 1e-6

    # Non-public with a DSA, strong controls, low motives: T1 = 0.05; T3 = 0.27 decides.
    services.assessment_set_release(
        assessment=assessment,
        release_model="non_public",
        recipient_organization="Uni",
        agreement_kind="dsa",
        agreement_reference="DSA-1",
    )
    services.assessment_set_context(
        assessment=assessment,
        answers={
            "controls": CONTROLS_ALL_YES,
            "motives": MOTIVES_LOW,
            "prevalence": 0.001,
            "prevalence_source": "Registry",
        },
    )
    r = assessment.context_result
    assert (r["insider"]["probability"], r["value"], r["deciding_attack"]) == (0.05, 0.27, "T3")
    assert r["controls"]["level"] == "high" and r["motives"]["level"] == "low"


def test_context_needs_prevalence_and_its_source(assessment):
    services.assessment_set_release(
        assessment=assessment,
        release_model="semi_public",
        recipient_organization="Registered users",
    )
    with pytest.raises(ApplicationError, match="prevalence"):
        services.assessment_set_context(assessment=assessment, answers={})
    with pytest.raises(ApplicationError, match="Cite the source"):
        services.assessment_set_context(assessment=assessment, answers={"prevalence": 0.1})


def test_changing_an_earlier_step_marks_later_results_stale(assessment):
    services.assessment_set_release(
        assessment=assessment,
        release_model="semi_public",
        recipient_organization="Registered users",
    )
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(
        assessment=assessment, answers={"prevalence": 0.001, "prevalence_source": "Registry"}
    )
    state = {s["step"].slug: s["state"] for s in steps.step_states(assessment)}
    assert state["threshold"] == "done" and state["context-risk"] == "done"

    stale = services.assessment_set_release(assessment=assessment, release_model="public")
    assert "context-risk" in stale
    state = {s["step"].slug: s["state"] for s in steps.step_states(assessment)}
    assert state["context-risk"] == "stale"
    assert state["overall-risk"] == "to do"  # the data risk (Step 4) was never measured
    assert not steps.all_done(assessment)
    # The context was recomputed for the new model (public → 1) but still awaits confirmation.
    assert assessment.context_result["value"] == 1.0
    services.assessment_set_context(assessment=assessment, answers={})
    state = {s["step"].slug: s["state"] for s in steps.step_states(assessment)}
    assert state["context-risk"] == "done"


def test_data_risk_job_and_overall_risk(assessment, analyst):
    services.assessment_set_release(
        assessment=assessment,
        release_model="semi_public",
        recipient_organization="Registered users",
    )
    services.assessment_set_threshold(
        assessment=assessment, profile="ontario_ipc_2016", answers=LOW_ANSWERS
    )
    services.assessment_set_context(
        assessment=assessment, answers={"prevalence": 0.001, "prevalence_source": "Registry"}
    )
    job = services.assessment_start_risk(assessment=assessment, user=analyst)
    assert job_execute(job_id=str(job.id))
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assessment.refresh_from_db()
    r = assessment.risk_result
    # Classes on (age, sex): sizes 3, 2, 4, 1 → max risk 1/1, average 4/10.
    assert r["quasi_identifiers"] == ["age", "sex"]
    assert (r["max_risk"], r["average_risk"], r["data_risk"]) == (1.0, 0.4, 1.0)
    assert r["profile"]["uniques"] == 1
    # Target = threshold 0.1 / context 0.6 = 1/6: records in classes smaller than 6 are at risk.
    assert abs(r["target"] - 0.1 / 0.6) < 1e-12
    assert r["records_at_risk"]["rows"] == 10
    # Leaving sex out: ages 30×5, 40×4, 50×1 → max risk still 1; leaving age out: F×7, M×3 → 1/3.
    drivers = {d["left_out"]: d["max_risk"] for d in r["drivers"]}
    assert drivers == {"sex": 1.0, "age": pytest.approx(1 / 3)}
    assert r["drivers"][0]["left_out"] == "age"
    # Records at risk (classes under 6) without each: without age F x7, M x3 -> 3; without
    # sex 30 x5, 40 x4, 50 x1 -> 10. Distinction 3/10 and 2/10.
    by = {d["left_out"]: d for d in r["drivers"]}
    assert (by["age"]["records_at_risk"], by["sex"]["records_at_risk"]) == (3, 10)
    assert (by["age"]["distinction"], by["sex"]["distinction"]) == (0.3, 0.2)
    # The one unique record (50, M): unique on age alone (50 x1) -> one MSU {age}.
    msu = r["minimal_uniques"]
    assert (msu["records_unique"], msu["by_size"]) == (1, {"1": 1})
    assert msu["combinations"] == [{"columns": ["age"], "records": 1}]
    # Sensitive diagnosis: class (30,F) is all asthma → homogeneous with 3 rows.
    (diag,) = r["attribute_disclosure"]
    assert diag["column"] == "diagnosis" and diag["homogeneous_shared_rows"] == 3
    overall = overall_risk(assessment)
    assert overall["value"] == pytest.approx(0.6) and overall["passes"] is False
    assert overall["target_class_size"] == 6


def test_reclassifying_a_variable_makes_the_data_risk_stale(assessment, analyst):
    from apps.classification.models import Variable
    from apps.classification.services import RoleDecision, variables_classify

    services.assessment_set_release(assessment=assessment, release_model="public")
    job = services.assessment_start_risk(assessment=assessment, user=analyst)
    job_execute(job_id=str(job.id))
    assessment.refresh_from_db()
    assert {s["step"].slug: s["state"] for s in steps.step_states(assessment)}[
        "data-risk"
    ] == "done"
    sex = Variable.objects.get(dataset=assessment.dataset, name="sex")
    variables_classify(
        dataset=assessment.dataset,
        user=analyst,
        decisions=[
            RoleDecision(
                variable_id=str(sex.id), role="other", reason="Not known to outsiders here"
            )
        ],
    )
    assessment.refresh_from_db()
    assert {s["step"].slug: s["state"] for s in steps.step_states(assessment)}[
        "data-risk"
    ] == "stale"
