"""Step 2 services: suggestions become variables; confirmations and changes are recorded."""

import polars as pl
import pytest

from apps.classification.models import ClassificationChange, Variable
from apps.classification.selectors import classification_status
from apps.classification.services import (
    RoleDecision,
    variables_accept_suggestions,
    variables_classify,
    variables_create_from_profile,
)
from apps.core.errors import ApplicationError
from apps.datasets.profiling import profile_parquet
from tests.conftest import read_now

FRAME = pl.DataFrame(
    {
        "email": ["a@x.org", "b@y.com", "c@z.net", "d@w.ca"],
        "age": ["34", "51", "34", None],
        "sex": ["F", "M", "F", "M"],
        "diagnosis": ["J45 Asthma", "E11 Diabetes", "J45 Asthma", "I10 Hypertension"],
    }
)


@pytest.fixture
def dataset(custodian, analyst, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from apps.datasets.services import dataset_upload

    content = FRAME.write_csv().encode()
    dataset = dataset_upload(
        organization=custodian, user=analyst, upload=SimpleUploadedFile("d.csv", content)
    )
    return read_now(dataset)


def roles(dataset):
    return dict(Variable.objects.filter(dataset=dataset).values_list("name", "role"))


def test_variables_carry_suggestions_but_no_confirmed_role(dataset):
    suggested = dict(Variable.objects.filter(dataset=dataset).values_list("name", "suggested_role"))
    assert suggested == {
        "email": "direct",
        "age": "quasi",
        "sex": "quasi",
        "diagnosis": "sensitive",
    }
    assert set(roles(dataset).values()) == {""}
    status = classification_status(dataset=dataset)
    assert (status["total"], status["confirmed"], status["complete"]) == (4, 0, False)


def test_accepting_suggestions_records_each_with_its_reason(dataset, analyst):
    changes = variables_accept_suggestions(dataset=dataset, user=analyst)
    assert len(changes) == 4
    assert roles(dataset) == {
        "email": "direct",
        "age": "quasi",
        "sex": "quasi",
        "diagnosis": "sensitive",
    }
    email = Variable.objects.get(dataset=dataset, name="email")
    change = ClassificationChange.objects.get(variable=email)
    assert (change.from_role, change.to_role, change.changed_by) == ("", "direct", analyst)
    # Recorded as accepted as suggested, with the suggestion's reason and its evidence.
    assert change.reason == (
        f"Accepted as suggested (high confidence): {email.suggested_reason} Evidence: "
        "100 % of 4 sampled values are valid e-mail addresses; "
        "the column name 'email' suggests an e-mail address."
    )
    assert classification_status(dataset=dataset)["complete"] is True
    # Accepting again changes nothing and records nothing.
    assert variables_accept_suggestions(dataset=dataset, user=analyst) == []


def test_departing_from_the_suggestion_needs_a_reason(dataset, analyst):
    sex = Variable.objects.get(dataset=dataset, name="sex")
    with pytest.raises(ApplicationError, match="say why it is other rather than quasi-identifier"):
        variables_classify(
            dataset=dataset,
            user=analyst,
            decisions=[RoleDecision(variable_id=str(sex.id), role="other")],
        )
    assert roles(dataset)["sex"] == ""
    assert not ClassificationChange.objects.exists()
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[
            RoleDecision(variable_id=str(sex.id), role="other", reason="Constant in this cohort")
        ],
    )
    change = ClassificationChange.objects.get()
    assert (change.from_role, change.to_role, change.reason) == (
        "",
        "other",
        "Constant in this cohort",
    )


def test_every_change_is_kept_in_order(dataset, analyst, reviewer):
    age = Variable.objects.get(dataset=dataset, name="age")
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[RoleDecision(variable_id=str(age.id), role="quasi")],
    )
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[RoleDecision(variable_id=str(age.id), role="sensitive", reason="Outcome")],
    )
    history = list(
        ClassificationChange.objects.filter(variable=age)
        .order_by("created_at")
        .values_list("from_role", "to_role", "reason")
    )
    assert history[0][:2] == ("", "quasi")
    assert history[1] == ("quasi", "sensitive", "Outcome")


def test_unknown_role_and_foreign_variable_are_refused(dataset, analyst, custodian):
    sex = Variable.objects.get(dataset=dataset, name="sex")
    with pytest.raises(ApplicationError, match="'secret' is not a role"):
        variables_classify(
            dataset=dataset,
            user=analyst,
            decisions=[RoleDecision(variable_id=str(sex.id), role="secret", reason="x")],
        )
    with pytest.raises(ApplicationError, match="is not a column of data set"):
        variables_classify(
            dataset=dataset,
            user=analyst,
            decisions=[
                RoleDecision(
                    variable_id="00000000-0000-0000-0000-000000000000", role="other", reason="x"
                )
            ],
        )


def test_rerunning_profiling_keeps_confirmed_roles(dataset, analyst, tmp_path):
    variables_accept_suggestions(dataset=dataset, user=analyst)
    path = tmp_path / "again.parquet"
    FRAME.write_parquet(path)
    variables_create_from_profile(dataset=dataset, profile=profile_parquet(path), sample=FRAME)
    assert Variable.objects.filter(dataset=dataset).count() == 4
    assert roles(dataset)["email"] == "direct"


def test_direct_identifier_kept_for_analysis_is_warned(dataset, analyst):
    email = Variable.objects.get(dataset=dataset, name="email")
    variables_classify(
        dataset=dataset,
        user=analyst,
        decisions=[RoleDecision(variable_id=str(email.id), role="direct", keep_for_analysis=True)],
    )
    warnings = " ".join(classification_status(dataset=dataset)["warnings"])
    assert "email" in warnings and "quasi" in warnings.lower()


def test_every_missing_reason_is_reported_at_once_and_nothing_is_saved(
    dataset, analyst, client_for, custodian
):
    from django.urls import reverse

    by_name = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
    decisions = [
        RoleDecision(variable_id=str(by_name["email"].id), role="direct"),  # the suggestion
        RoleDecision(variable_id=str(by_name["sex"].id), role="other"),
        RoleDecision(variable_id=str(by_name["age"].id), role="sensitive"),
    ]
    with pytest.raises(ApplicationError) as refused:
        variables_classify(dataset=dataset, user=analyst, decisions=decisions)
    assert refused.value.extra["errors"] == {
        "sex": "Column 'sex': say why it is other rather than quasi-identifier.",
        "age": "Column 'age': say why it is sensitive rather than quasi-identifier.",
    }
    assert refused.value.message.startswith("2 columns need attention:")
    assert roles(dataset)["email"] == ""  # the valid decision was not half-saved
    assert not ClassificationChange.objects.exists()

    # The page marks both rows in one round.
    form = {
        f"role-{v.id}": {"sex": "other", "age": "sensitive"}.get(name, v.suggested_role)
        for name, v in by_name.items()
    }
    response = client_for(analyst).post(
        reverse("dataset-classify", kwargs={"org": custodian.slug, "dataset_id": dataset.id}),
        form,
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert page.count('class="error-text"') == 2
    assert f'id="err-{by_name["sex"].id}"' in page
    assert f'id="err-{by_name["age"].id}"' in page
