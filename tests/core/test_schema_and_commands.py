import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def test_openapi_schema_documents_every_endpoint(client, analyst):
    client.force_login(analyst)
    response = client.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    paths = set(schema["paths"])
    for expected in (
        "/api/v1/datasets/",
        "/api/v1/datasets/{id}/",
        "/api/v1/datasets/{id}/profile/",
        "/api/v1/datasets/{id}/preview/",
        "/api/v1/variables/",
        "/api/v1/variables/{id}/classify/",
        "/api/v1/classification/{id}/decisions/",
        "/api/v1/classification/{id}/accept-suggestions/",
        "/api/v1/classification/{id}/history/",
        "/api/v1/jobs/{id}/",
        "/api/v1/jobs/{id}/cancel/",
        "/api/v1/organizations/",
    ):
        assert expected in paths, expected
    upload = schema["paths"]["/api/v1/datasets/"]["post"]["requestBody"]["content"]
    assert "multipart/form-data" in upload


def test_schema_generation_has_no_warnings():
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "spectacular",
            "--validate",
            "--fail-on-warn",
            "--file",
            "/dev/null",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"DJANGO_SETTINGS_MODULE": "deidweb.settings.test", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_seed_demo_is_idempotent_and_prints_logins(db, settings, tmp_path, capsys):
    from apps.accounts.models import Membership
    from apps.classification.models import Variable
    from apps.datasets.models import Dataset

    settings.VAR_DIR = tmp_path
    call_command("seed_demo", rows=300, patients=50)
    call_command("seed_demo", rows=300, patients=50)
    out = capsys.readouterr().out
    logins = json.loads((tmp_path / "demo-logins.json").read_text())
    assert set(logins) == {"demo-analyst", "demo-reviewer", "demo-admin"}
    assert f"password {logins['demo-analyst']}" in out
    roles = dict(
        Membership.objects.filter(organization__slug="demo").values_list("user__username", "role")
    )
    assert roles == {"demo-analyst": "analyst", "demo-reviewer": "reviewer", "demo-admin": "admin"}
    dataset = Dataset.objects.get(organization__slug="demo", name="Demo patient register")
    assert (dataset.status, dataset.original_filename) == ("converting", "demo_register.csv")
    assert dataset.profile_job.kind == "ingest"  # the worker reads its 300 rows
    assert (tmp_path / "demo" / "demo_register.csv").exists()
    assert not Variable.objects.filter(dataset=dataset).exists()  # the worker profiles it
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    sign_in = RequestFactory().post("/accounts/login/")  # the lockout backend needs a request
    user = authenticate(sign_in, username="demo-reviewer", password=logins["demo-reviewer"])
    assert user is not None


def test_demo_users_have_names_people_have(db, settings, tmp_path):
    """Printed in every report they sign (issue #22): a first and a last name from the
    product's lists of real names, not a pun on the role ("Ana Lyst", "Rev Iewer"); an
    installation seeded with the old names gets the new ones."""
    from django.contrib.auth import get_user_model

    from apps.engine.namelists import FIRST_NAMES, LAST_NAMES

    settings.VAR_DIR = tmp_path
    get_user_model().objects.create_user(
        username="demo-reviewer", password="x" * 20, first_name="Rev", last_name="Iewer"
    )
    call_command("seed_demo", rows=50, patients=30)
    users = get_user_model().objects.filter(username__startswith="demo-")
    assert users.count() == 3
    for user in users:
        role = user.username.removeprefix("demo-")
        assert user.first_name in FIRST_NAMES and user.last_name in LAST_NAMES, user
        assert role not in (user.first_name + user.last_name).lower(), user


def test_seed_demo_draws_again_a_password_the_validators_refuse(
    db, settings, tmp_path, monkeypatch
):
    """A random password can resemble its user's name (CI drew '-3rMpyCybeLA' for Sophie
    Tremblay, and the whole seeding failed) or be all digits: such a draw is drawn again, and
    one kept from an earlier installation that the validators now refuse is replaced."""
    from django.contrib.auth import authenticate
    from django.test import RequestFactory

    from apps.reports.management.commands import seed_demo

    settings.VAR_DIR = tmp_path
    draws = iter(
        [
            "santos12345",  # like Maria Santos's last name
            "938475610293",  # all digits
            "Vq7-kLw2pX9z",
            "okafor-2024",  # like David Okafor's
            "Hn4_tY8mRc2e",
            "-3rMpyCybeLA",  # CI's draw for Sophie Tremblay
            "Zp9-Wd3kQ7uf",
        ]
    )
    monkeypatch.setattr(seed_demo, "_random_password", lambda: next(draws))
    call_command("seed_demo", rows=50, patients=30)
    logins = json.loads((tmp_path / "demo-logins.json").read_text())
    assert logins == {
        "demo-analyst": "Vq7-kLw2pX9z",
        "demo-reviewer": "Hn4_tY8mRc2e",
        "demo-admin": "Zp9-Wd3kQ7uf",
    }
    sign_in = RequestFactory().post("/accounts/login/")
    for username, password in logins.items():
        assert authenticate(sign_in, username=username, password=password) is not None

    # An earlier installation's file holds a password the validators refuse for its user.
    (tmp_path / "demo-logins.json").write_text(json.dumps({**logins, "demo-admin": "tremblay1"}))
    draws = iter(["Kc5_uJ2nWe8r"])
    call_command("seed_demo", rows=50, patients=30)
    logins = json.loads((tmp_path / "demo-logins.json").read_text())
    assert logins["demo-admin"] == "Kc5_uJ2nWe8r" and logins["demo-analyst"] == "Vq7-kLw2pX9z"
    assert authenticate(sign_in, username="demo-admin", password="Kc5_uJ2nWe8r") is not None


@pytest.mark.parametrize("args", [["deid", "measure", "/nonexistent.csv", "--quasi", "a"]])
def test_deid_command_forwards_to_the_engine_and_its_exit_code(args):
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"DJANGO_SETTINGS_MODULE": "deidweb.settings.test", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert "nonexistent.csv" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
