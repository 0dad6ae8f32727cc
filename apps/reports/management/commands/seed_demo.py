"""Load the demo organization, its three users and the two demo data sets (idempotent):
the patient register (one row per patient) and the hospital visits (several rows per
patient), whose assessment has the chart number declared as the person key.

It sets up every layer at once (organization and users, data sets, the signing identity of
the reports), so it lives in the top app, ``reports``."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import BaseCommand

from apps.accounts.models import Organization, Role
from apps.accounts.services import (
    membership_set,
    organization_create,
    password_check,
    user_set_password,
)
from apps.assessments.models import Assessment
from apps.assessments.persons import assessment_set_persons
from apps.assessments.services import assessment_create
from apps.classification.models import Variable
from apps.classification.services import RoleDecision, variables_classify
from apps.core.errors import ApplicationError
from apps.datasets.demo import write_demo_csv
from apps.datasets.demo_visits import write_visits_csv
from apps.datasets.models import Dataset, DatasetStatus
from apps.datasets.services import dataset_upload
from apps.jobs.claiming import job_execute
from apps.reports.identity import organization_signing_ensure

DEMO_ORG = {"name": "Demo Health Agency", "slug": "demo"}
# Names as people have them: they are printed in reports and pages next to real ones.
DEMO_USERS = [
    ("demo-analyst", Role.ANALYST, "Maria", "Santos"),
    ("demo-reviewer", Role.REVIEWER, "David", "Okafor"),
    ("demo-admin", Role.ADMIN, "Sophie", "Tremblay"),
]
DEMO_DATASET_NAME = "Demo patient register"
DEMO_VISITS_NAME = "Demo hospital visits"
DEMO_VISITS_ASSESSMENT = "Hospital visits: risk counted in patients"
# Step 2 of the visits, as the demo's analyst decided it (each with the reason recorded).
DEMO_VISITS_ROLES = {
    "chart_number": ("direct", "The hospital's chart number names the patient; it is the "
                     "person key and leaves only as a keyed pseudonym."),
    "sex": ("quasi", "Known to relatives, neighbours and employers."),
    "birth_year": ("quasi", "Reveals age; known to anyone who knows the patient."),
    "fsa": ("quasi", "Where the patient lives; public in directories and known to others."),
    "admission_date": ("quasi", "An acquaintance may know when the patient was in hospital."),
    "diagnosis_code": ("quasi", "Why a patient was admitted can be known to those around them "
                       "and is linked to their visits."),
    "length_of_stay": ("quasi", "How long someone stayed in hospital is noticed by others."),
    "discharge_disposition": ("sensitive", "How the stay ended (death, long-term care) is the "
                              "health information the analysis needs."),
}  # fmt: skip


def _logins_file() -> Path:
    return Path(settings.VAR_DIR) / "demo-logins.json"


def _fields(username: str, first: str, last: str) -> dict[str, str]:
    """A demo user's names and e-mail (what the password validators compare with)."""
    return {"first_name": first, "last_name": last, "email": f"{username}@example.org"}


def _acceptable(password: str, user: Any) -> bool:
    try:
        password_check(password=password, user=user)
    except ApplicationError:
        return False
    return True


def _random_password() -> str:
    return secrets.token_urlsafe(9)


def _new_password(user: Any, *, tries: int = 100) -> str:
    """A random password the site's validators accept for ``user``."""
    for _ in range(tries):
        password = _random_password()
        if _acceptable(password, user):
            return password
    raise ApplicationError(
        f"No random password passed the site's password validators for {user.username} "
        f"in {tries} draws; check AUTH_PASSWORD_VALIDATORS."
    )


class Command(BaseCommand):
    help = "Create the demo organization, users (analyst, reviewer, admin) and data set."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--logins-only", action="store_true", help="Only print the logins.")
        parser.add_argument("--rows", type=int, default=5000, help="Rows of the demo register.")
        parser.add_argument(
            "--patients", type=int, default=2000, help="Patients of the demo hospital visits."
        )

    def handle(
        self,
        *args: Any,
        logins_only: bool = False,
        rows: int = 5000,
        patients: int = 2000,
        **options: Any,
    ) -> None:
        logins = self._logins()
        if not logins_only:
            organization = self._organization()
            for username, role, first, last in DEMO_USERS:
                user = self._user(username, logins[username], first, last)
                membership_set(organization=organization, user=user, role=role)
            self._dataset(organization, rows)
            self._visits(organization, patients)
            organization_signing_ensure(organization=organization)  # signs its Step 9 reports
        self.stdout.write("Demo logins (organization 'Demo Health Agency'):")
        for username, role, _, _ in DEMO_USERS:
            self.stdout.write(f"  {role.label:<26} user {username:<14} password {logins[username]}")
        csv_path = Path(settings.VAR_DIR) / "demo" / "demo_register.csv"
        self.stdout.write(f"Demo file to upload by hand: {csv_path}")
        visits_path = Path(settings.VAR_DIR) / "demo" / "demo_visits.csv"
        self.stdout.write(f"Demo visits (several rows per patient): {visits_path}")

    def _logins(self) -> dict[str, str]:
        """Passwords are random per installation, kept in var/ so every start prints the same.

        Each one passes the site's password validators for its user (a random string can
        resemble the user's name, or be all digits); one kept from an earlier installation
        that no longer passes is drawn again."""
        path = _logins_file()
        stored: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        changed = False
        for username, _, first, last in DEMO_USERS:
            user = get_user_model()(username=username, **_fields(username, first, last))
            if username not in stored or not _acceptable(stored[username], user):
                stored[username] = _new_password(user)
                changed = True
        if changed:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(stored, indent=2))
            path.chmod(0o600)
        return stored

    def _organization(self) -> Organization:
        organization = Organization.objects.filter(slug=DEMO_ORG["slug"]).first()
        return organization or organization_create(**DEMO_ORG)

    def _user(self, username: str, password: str, first: str, last: str) -> Any:
        User = get_user_model()
        user, _ = User.objects.get_or_create(
            username=username, defaults=_fields(username, first, last)
        )
        if (user.first_name, user.last_name) != (first, last):  # an earlier demo's names
            user.first_name, user.last_name = first, last
            user.save(update_fields=["first_name", "last_name"])
        if not user.check_password(password):
            user_set_password(user=user, password=password)  # the site's validators apply
        return user

    def _dataset(self, organization: Organization, rows: int) -> None:
        csv_path = Path(settings.VAR_DIR) / "demo" / "demo_register.csv"
        csv_path.parent.mkdir(parents=True, exist_ok=True)
        if not csv_path.exists():
            write_demo_csv(csv_path, n=rows)
        if Dataset.objects.filter(organization=organization, name=DEMO_DATASET_NAME).exists():
            return
        analyst = get_user_model().objects.get(username="demo-analyst")
        with csv_path.open("rb") as handle:
            upload = File(handle, name=csv_path.name)
            dataset = dataset_upload(
                organization=organization,
                user=analyst,
                upload=upload,  # type: ignore[arg-type]
                name=DEMO_DATASET_NAME,
                description="A synthetic register of patients generated by deidweb itself; "
                "no real person is in it.",
            )
        self.stdout.write(
            f"Loaded '{dataset.name}' ({rows} rows); reading and profiling are queued."
        )

    def _visits(self, organization: Organization, patients: int) -> None:
        """The hospital visits: uploaded, read and profiled here (a few thousand rows), so
        that their assessment's Step 2 can declare the chart number as the person key with
        the levels the data suggests; Step 3 onwards is left to the person trying it."""
        csv_path = Path(settings.VAR_DIR) / "demo" / "demo_visits.csv"
        if not csv_path.exists():
            write_visits_csv(csv_path, patients=patients)
        analyst = get_user_model().objects.get(username="demo-analyst")
        dataset = Dataset.objects.filter(organization=organization, name=DEMO_VISITS_NAME).first()
        if dataset is None:
            with csv_path.open("rb") as handle:
                dataset = dataset_upload(
                    organization=organization,
                    user=analyst,
                    upload=File(handle, name=csv_path.name),  # type: ignore[arg-type]
                    name=DEMO_VISITS_NAME,
                    description="Synthetic hospital visits generated by deidweb itself, "
                    "several rows per patient; no real person is in it.",
                )
        if dataset.status != DatasetStatus.READY and dataset.profile_job_id:
            job_execute(job_id=str(dataset.profile_job_id))  # as a worker would
            dataset.refresh_from_db()
        if dataset.status != DatasetStatus.READY:
            self.stdout.write(
                f"'{dataset.name}' is not read yet ({dataset.status}); run seed_demo again "
                "to create its assessment."
            )
            return
        if Assessment.objects.filter(dataset=dataset, title=DEMO_VISITS_ASSESSMENT).exists():
            return
        variables = {v.name: v for v in Variable.objects.filter(dataset=dataset)}
        variables_classify(
            dataset=dataset,
            user=analyst,
            decisions=[
                RoleDecision(str(variables[name].id), role, reason)
                for name, (role, reason) in DEMO_VISITS_ROLES.items()
                if name in variables and variables[name].role != role
            ],
        )
        assessment = assessment_create(
            organization=organization, dataset=dataset, user=analyst, title=DEMO_VISITS_ASSESSMENT
        )
        assessment_set_persons(assessment=assessment, user=analyst, person_key="chart_number")
        assessment.refresh_from_db()
        levels = ", ".join(f"{c} {level}" for c, level in assessment.person_levels.items())
        self.stdout.write(
            f"Loaded '{dataset.name}' ({dataset.rows:,} visits); assessment "
            f"'{assessment.title}' with person key chart_number ({levels})."
        )
